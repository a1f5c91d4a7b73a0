"""The prompt, pure: :mod:`.assembly` puts the system prompt, the stable history and the
recalled block together in the order provider caches reward; :mod:`.window` decides where the
history window begins, cut in steps so the prefix stays stable; :mod:`.safety` quotes user
text as data (speaker tags, JSON lines), never as an instruction. Trimming whole turns is
:mod:`bot.llm.trim`. What reads the parts from the store is
:mod:`bot.conversation.prompt_sources`.
"""
