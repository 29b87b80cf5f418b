"""Text for speech: incremental sentence segmentation (:mod:`.segmenter`, which documents the rules), where sentences
and clauses end (:mod:`.boundaries`), cutting text to fit the model (:mod:`.fit`), and joining a turn's text deltas
before they are relayed (:mod:`.coalescing`)."""
