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
