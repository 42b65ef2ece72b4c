"""The Generate tab: Run / Stop, the coloured tokens, the cards, the inspector and step-through, the plots, the
steps table, the exports and the session's report."""
