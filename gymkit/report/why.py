"""One line per reward channel saying why a card has the value it has.

The explanations live in the channel table itself (``Channel.why`` of each row of
:data:`gymkit.verifiers.channels.CHANNELS`): a sentence built from the card's own metrics and
the table's thresholds, so the sentence and the value cannot drift apart silently (the tests
recompute each value from the numbers the sentence quotes).  This module only reads it.
"""

from __future__ import annotations

from gymkit.card import ScoreCard
from gymkit.verifiers.channels import ChannelParams, channel

__all__ = ["channel_reasons"]


def channel_reasons(card: ScoreCard, params: ChannelParams) -> dict[str, str]:
    """Return ``{channel: one-line reason}`` for every channel on ``card``, in card order.

    Each line is the channel row's ``why``; an unknown channel name raises ``ValueError``.
    """
    return {name: channel(name).why(card, params) for name in card.channels}
