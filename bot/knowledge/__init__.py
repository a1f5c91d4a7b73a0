"""Knowledge bases: a group's own documents, read into structured blocks (:mod:`.formats`) and
cut into token-sized chunks that follow the document's structure (:mod:`.chunking`)."""
