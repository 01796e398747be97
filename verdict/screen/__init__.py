"""The verdict screen: a self-contained HTML page (:mod:`.render`) and its server (:mod:`.app`)."""
