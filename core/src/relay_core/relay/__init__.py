"""The gateway's side of a turn (docs/functions.md, "The relay"): the relay's state machine (:mod:`.turn`), its
phases and the inputs each accepts (:mod:`.phases`), the commands it gives its driver (:mod:`.commands`), the turn
record's transition table (:mod:`.turn_record`) and the buffer a resuming client is served from
(:mod:`.resume_buffer`)."""
