"""`Membership`: the bridge's place in its consumer group — the subscription and its
callbacks, when it was last assigned, and when to leave and join again with a new consumer."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from service.bridge.clients import KafkaClients, finished_within
from service.bridge.errors import BridgeError
from service.bridge.log import log
from service.bridge.options import BridgeOptions

__all__ = ["Membership"]


class Membership:
    """The consumer's membership of the group; `revoked` is the bridge's hook for partitions
    taken from it (called inside ``consume``)."""

    def __init__(self, options: BridgeOptions, *, clients: KafkaClients,
                 clock: Callable[[], float],
                 revoked: Callable[[list[TopicPartition]], None]) -> None:
        self.options, self.clients, self.clock, self.revoked = options, clients, clock, revoked
        self.assigned_at: float | None = None  # None until the group gave this copy its share
        self.lost = False  # the group took this copy's partitions without a revocation
        self.unassigned_since: float | None = None  # joining the group (or again) since

    def join(self) -> None:
        """Subscribe to the source topic (the group assigns partitions inside ``consume``)."""
        self.unassigned_since = self.clock()
        self.clients.consumer.subscribe([self.options.source_topic], on_assign=self._assigned,
                                        on_revoke=self._revoked, on_lost=self._lost)

    def _assigned(self, _consumer: Consumer, _partitions: list[TopicPartition]) -> None:
        self.assigned_at = self.clock()  # idle time counts from the (re)assignment
        self.unassigned_since = None

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.revoked(partitions)
        self.unassigned_since = self.clock()

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # The session expired (a broker restarting, say): librdkafka goes on fetching the
        # lost partitions, and records fetched then reached the application after the next
        # assignment, ahead of the fetch from the committed offsets (librdkafka 2.16: a batch
        # converted and committed twice). A new consumer has no such records.
        self._revoked(consumer, partitions)
        self.lost = True

    def rejoin_reason(self) -> str | None:
        """Why this copy must join again with a new consumer now (None: it need not)."""
        if self.lost:
            return "the consumer group took this copy's partitions (its session expired)"
        if (self.unassigned_since is not None
                and self.clock() - self.unassigned_since >= self.options.broker_timeout):
            # Even a copy with no partition gets an (empty) assignment: a join that has not
            # ended by now waits on a group coordinator librdkafka no longer reaches.
            return (f"joining the consumer group did not end within --broker-timeout "
                    f"{self.options.broker_timeout:g} s")
        return None

    def rejoin(self, why: str) -> None:
        """Leave the group and join it again with a new consumer, which starts at
        the committed offsets. Not a seek: a seek on partitions whose assignment was lost
        started a fetch that librdkafka (2.16) delivered after the next assignment, next to
        the one from the committed offsets (seen in a broker restart: a batch committed
        twice).

        Raises:
            BridgeError: the bridge cannot make a new consumer.
        """
        renew = self.clients.renew_consumer
        if renew is None:
            raise BridgeError(f"{why}; restart the bridge to resume after the last committed "
                              f"offsets")
        log(f"{why}: leaving the consumer group and joining it again with a new consumer, "
            f"from the committed offsets")
        self.leave()
        self.clients.consumer = renew()
        self.lost, self.assigned_at = False, None
        self.join()

    def leave(self) -> None:
        """Leave the group now, so the others rebalance at once; bounded, since librdkafka's
        close can block for good once the brokers are gone (a bridge that lost its broker
        must still exit and be restarted; the group then notices after
        session.timeout.ms, and no offset is lost: they ride the transactions)."""
        wait = max(self.options.broker_timeout, 10.0)
        if not finished_within(self.clients.consumer.close, wait):
            log(f"leaving the consumer group did not finish within {wait:g} s (is the "
                "broker gone?); going on without it")
