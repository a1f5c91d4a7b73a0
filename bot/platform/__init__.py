"""What a platform adapter builds on: :mod:`.adapter` (the seam an adapter implements),
:mod:`.delivery` (messages the bot starts itself, such as reminders, and who takes them),
:mod:`.media` (attachments: what a model may see or hear, and their checks).
"""
