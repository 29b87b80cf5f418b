"""A corpus of realistic agent replies: the text of every time-to-first-sound benchmark.

Written for this project (not copied). The replies vary where it matters for first sound: first sentences with
no punctuation in their first words, long ones, questions, numbers and prices, lists, a URL, a paragraph
break, short acknowledgements. ``REPLIES`` is used by bench/bench_first_sound.py and the TTFA benchmarks; the
intelligibility test reads a few of them (``ASR_SAMPLE``).
"""

from __future__ import annotations

from typing import Final

REPLIES: Final[tuple[str, ...]] = (
    "Your order left the warehouse this morning and should arrive by Thursday. "
    "I will send you the tracking number as soon as the carrier scans it.",
    "I checked the calendar for next week and the only free slot with both of them is Tuesday at ten. Shall I book it?",
    "The flight to Lisbon is delayed by about forty minutes because of fog at the departure airport. "
    "Boarding now starts at eleven fifteen.",
    "Sure. The invoice total comes to 1,284 dollars and 50 cents, including tax. "
    "It is due on the fifteenth of next month.",
    "Do you want me to move the meeting to the afternoon or cancel it altogether? "
    "Either works for the rest of the team.",
    "There are three things you need before the appointment.\n"
    "- Your insurance card.\n- A list of the medicines you take.\n- The referral letter from your doctor.",
    "The password reset link is valid for thirty minutes and can only be used once. "
    "If it expires, request a new one from the sign in page.",
    "You can find the full return policy at https://example.com/returns, and the form is at the bottom of the page. "
    "Most refunds arrive within five working days.",
    "Based on the numbers you gave me the monthly payment would be about 412 euros over five years. "
    "A shorter term lowers the total interest but raises each payment.",
    "Good morning! Today will be sunny with a high of 24 degrees and a light breeze from the west. "
    "Rain is expected again on Friday.",
    "The quickest way to the station from here is to walk north along the river for about ten minutes. "
    "Then cross the second bridge and the entrance is on your left.",
    "Your subscription renews on the third of January for 9.99 a month. "
    "You can cancel at any time from the account settings.",
    "I could not find a restaurant with a free table at eight but there is one at a quarter past nine. "
    "It is an Italian place about five minutes from your hotel.",
    "Let me summarise the report for you. Revenue grew by 12 percent in the third quarter, "
    "mostly because of the new product line.\n\nCosts stayed flat, so the margin improved by two points.",
    "Which of the two addresses should I use for the delivery? The one on Baker Street or the one near the office?",
    "Thanks for waiting while I looked into this. The package was delivered to a neighbour at number 14 "
    "because nobody answered the door.",
    "The train that leaves at 7:45 gets you to the conference with about twenty minutes to spare. "
    "The next one would make you late for the keynote.",
    "OK.",
    "To reset the router press and hold the small button on the back for ten seconds until the lights flash. "
    "Wait two minutes for it to restart, then try to connect again.",
    "Your blood pressure readings from this week look stable and are all within the normal range. "
    "Keep taking the same dose and measure again next Monday.",
    "I have added milk, eggs, two loaves of bread and a bag of apples to your shopping list. "
    "Is there anything else you need for the weekend?",
    "Before I transfer the money I need you to confirm the amount of 250 pounds to Maria Lopez. "
    "Please say yes to continue or no to stop.",
    "The museum is open every day except Monday from nine in the morning until six in the evening. "
    "Tickets cost fifteen euros for adults and children under twelve go in for free.",
    "Here is what I found about your question on solar panels. "
    "A typical home system of six kilowatts produces around 7,000 kilowatt hours a year.",
    "Unfortunately the item you asked about is out of stock in your size right now. "
    "I can notify you as soon as it is back, or suggest a similar one.",
    "It looks like the payment failed because the card on file expired last month. "
    "Would you like to add a new card now?",
    "Your next dentist appointment is on Wednesday the 9th at 2:30 in the afternoon with Doctor Patel. "
    "I will remind you the evening before.",
    "The recipe needs 200 grams of flour, three eggs and half a litre of milk. "
    "Mix everything until smooth and let the batter rest for thirty minutes.",
    "According to the tracking page your parcel is in the sorting centre in Leeds and will be out for delivery "
    "tomorrow between eight and noon.",
    "I am sorry but I cannot share personal details about other customers. "
    "If you have a question about your own account I am happy to help.",
    "Here are the steps to export your data.\n1. Open the settings menu.\n2. Choose privacy.\n"
    "3. Select export and wait for the email with the download link.",
    "What time would you like to leave on Saturday morning? Traffic is usually light before eight.",
    "The battery on your laptop is at eighteen percent and will last for roughly forty minutes at this rate. "
    "Plug it in soon to avoid losing your work.",
    "Absolutely, I can help with that. Your current plan includes ten gigabytes of data per month "
    "and you have used 7.5 so far.",
)
"""34 agent replies of one to four sentences (about 70 to 240 characters)."""

ASR_SAMPLE: Final[tuple[int, ...]] = (0, 3, 9, 27)
"""Indices of the replies the intelligibility test speaks (a first sentence with no early comma, numbers,
an exclamation, a list of quantities)."""

MORE_REPLIES: Final[tuple[str, ...]] = (
    "Your car is booked in for a service on Monday at half past eight. "
    "The garage says it should be ready to collect by four in the afternoon.",
    "I found two hotels near the venue with rooms left for Friday night. "
    "The cheaper one is a twelve minute walk away and includes breakfast.",
    "The library book you borrowed is due back tomorrow. You can renew it online once for another three weeks.",
    "Your electricity bill for October was 86 pounds, which is a little lower than last month. "
    "Most of the saving came from the heating being off.",
    "Would you like the vegetarian or the fish option for the wedding dinner? The couple need an answer by Sunday.",
    "The parking garage on Elm Street has spaces free right now and charges three dollars an hour. "
    "It closes at midnight.",
    "I have sent the contract to Daniel for his signature. "
    "He usually replies within a day, and I will let you know as soon as it comes back.",
    "Your running pace improved by eight seconds per kilometre compared with last month. "
    "The longest run this week was eleven kilometres.",
    "The pharmacy on the corner can have your prescription ready in about an hour. "
    "Bring the card with your address on it when you pick it up.",
    "There is a storm warning for the coast tonight with gusts of up to ninety kilometres an hour. "
    "The ferry crossings after six have been cancelled.",
    "I moved your call with the design team to three o'clock and sent everyone the new invitation.",
    "The course starts on the second of March and runs for eight weeks, one evening a week. "
    "The fee is 320 dollars and there are four places left.",
    "Your flight home is on Sunday at ten past six in the evening from gate twenty two. "
    "Check in closes forty minutes before departure.",
    "The warranty on your washing machine runs until the end of next year. "
    "A technician can visit on Tuesday or Thursday morning.",
    "Here is a quick summary of the article. "
    "The city plans to plant twenty thousand trees over five years to cool the streets in summer.",
    "It will take about twenty five minutes to drive to the airport at this time of day. "
    "If you leave after five the traffic gets much heavier.",
    "Your daughter's school sent a message about the trip to the science museum on the fourteenth. "
    "They need the permission form and eight pounds by Wednesday.",
    "I could not reach the plumber this morning, so I left a message asking him to call you back.",
    "Your savings account earned 23 dollars and 40 cents in interest this quarter. "
    "The rate went up slightly in September.",
    "The concert on Saturday starts at half past seven and the doors open an hour earlier. "
    "Your tickets are in the email I forwarded yesterday.",
    "Do you want me to order the same coffee beans as last time? They are on offer this week.",
    "The new version of the app fixes the problem with notifications arriving late. "
    "It should install automatically tonight while your phone is charging.",
    "The gym is quietest on weekdays between two and four in the afternoon. "
    "The pool is closed for cleaning on Thursday mornings.",
    "I have booked a table for four at the Thai restaurant on Friday at seven thirty. "
    "They asked whether anyone has allergies.",
    "Your passport expires in five months, and some countries ask for at least six months of validity. "
    "It may be worth renewing it before the trip.",
    "The quarterly meeting has been moved to the large room on the third floor because more people signed up.",
    "According to the forecast it will rain until about eleven and then clear up for the afternoon.",
    "The delivery driver says he is ten minutes away. He will leave the parcel at the front door if you are out.",
    "You spent 142 euros on groceries this week, which is about the same as your weekly average.",
    "The bus you usually take is running twelve minutes late this morning. "
    "The number nine leaves two minutes from now and stops near your office.",
    "I checked the opening hours and the bank branch closes at four on Fridays. "
    "You can still use the cash machine outside after that.",
    "Your friend Sarah asked whether you are free for lunch on Thursday. Shall I tell her yes?",
    "The software update needs about fifteen minutes and will restart the computer twice. "
    "Save your work before you start it.",
    "The rent for the flat is 950 pounds a month with bills included. "
    "The landlord can show it to you on Saturday morning.",
    "Your heart rate during the walk stayed between ninety and one hundred and ten beats per minute.",
    "I am afraid that date is fully booked. The earliest free appointment is on the twenty first at nine.",
    "The train strike next Tuesday will affect most services in the north. "
    "Buses will replace some of the trains, but journeys will take longer.",
    "The paint you chose needs two coats and takes about four hours to dry between them.",
    "Your order of twelve notebooks and a box of pens has been confirmed. "
    "It will be delivered to the office on Monday.",
    "The water will be turned off in your building tomorrow from nine until noon for repairs.",
    "I added a reminder to call your grandmother on her birthday, which is next Saturday.",
    "Your phone plan allows calls to forty countries at no extra cost. Spain and Portugal are both included.",
    "The swimming lessons for children start at ten on Saturday mornings and last forty five minutes.",
    "The report is due on Friday, and three of the five sections are finished. "
    "The budget section still needs the figures from finance.",
    "There is a farmers market in the square every Sunday from eight until one.",
    "The translation of the letter is ready. It confirms that your application was received and is being reviewed.",
    "Your car insurance renewal quote is 610 dollars, which is forty dollars more than last year. "
    "I can look for cheaper offers if you like.",
    "The printer on the second floor is out of toner. A new cartridge has been ordered and should arrive today.",
    "The hiking trail to the lake is about six kilometres long and mostly flat. Allow two hours for the round trip.",
)
"""49 more agent replies in the same style, for measures that need more words (Whisper WER differences)."""

WER_REPLIES: Final[tuple[str, ...]] = REPLIES + MORE_REPLIES
"""83 replies (about 1,900 words): the corpus of the WER comparisons."""
