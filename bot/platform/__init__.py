"""What a platform adapter builds on: :mod:`.adapter` (the protocol an adapter implements),
:mod:`.seam` (the one object it is given: the conversation, commands, outbound, store, settings;
:mod:`.operator` its operator's view, :mod:`.commands` the command values),
:mod:`.delivery` (messages the bot starts itself, such as reminders, and who takes them),
:mod:`.media` (attachments: what a model may see or hear, and their checks),
:mod:`.siblings` (a platform's several bots: what one tells the others, run together).
"""
