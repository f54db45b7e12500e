"""The review gate's stores, per team, and what reviewers and the proxy ask of them.

Each team's review settings are gateway.yaml's `review` block with the team
file's `review` overrides on top; teams that name the same store URL share one
store object.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

from gateway.config.loader import LoadedConfig
from gateway.config.models import Review as ReviewSettings
from gateway.review.model import Review, Status
from gateway.review.store import NotFound, ReviewStore

StoreFactory = Callable[[str], ReviewStore]


def _default_factory(url: str) -> ReviewStore:
    from gateway.review.stores import open_store

    return open_store(url)


class Reviews:
    """Every team's review settings and store; opened and closed with the app."""

    def __init__(self, config: LoadedConfig, factory: StoreFactory = _default_factory) -> None:
        base = config.gateway.review
        self._settings: dict[str, ReviewSettings] = {
            name: team.review.over(base) for name, team in config.teams.items()
        }
        self._default = base
        self._by_url: dict[str, ReviewStore] = {}
        for settings in [base, *self._settings.values()]:
            if settings.store not in self._by_url:
                self._by_url[settings.store] = factory(settings.store)

    def reconfigured(self, config: LoadedConfig) -> Reviews:
        """`config`'s per-team settings on these (open) stores, for a config reload.

        Every store URL `config` names must be one of `urls`; the stores stay
        owned, opened and closed, by this object.
        """
        return Reviews(config, self._by_url.__getitem__)

    @property
    def urls(self) -> frozenset[str]:
        return frozenset(self._by_url)

    async def open(self) -> None:
        opened: list[ReviewStore] = []
        try:
            for store in self._by_url.values():
                await store.open()
                opened.append(store)
        except BaseException:
            for store in opened:
                await store.close()
            raise

    async def close(self) -> None:
        for store in self._by_url.values():
            await store.close()

    def settings(self, team: str) -> ReviewSettings:
        return self._settings.get(team, self._default)

    def store(self, team: str) -> ReviewStore:
        return self._by_url[self.settings(team).store]

    @property
    def stores(self) -> Iterable[ReviewStore]:
        return self._by_url.values()

    async def get(self, review_id: str) -> tuple[ReviewStore, Review]:
        """The review and the store that holds it; raises NotFound."""
        for store in self._by_url.values():
            review = await store.get(review_id)
            if review is not None:
                return store, review
        raise NotFound(f"no review {review_id}")

    async def list(
        self, *, team: str | None = None, status: Status | None = None, limit: int = 500
    ) -> list[Review]:
        """Newest first, across every store; ``team`` None lists every team's."""
        found: dict[str, Review] = {}
        for store in self._by_url.values():
            for review in await store.list(team=team, status=status, limit=limit):
                found[review.id] = review
        return sorted(found.values(), key=lambda r: r.created, reverse=True)[:limit]

    async def pending_by_team(self) -> dict[str, int]:
        """Pending reviews per team across every store; each configured team, 0 if none."""
        counts = dict.fromkeys(self._settings, 0)
        for store in self._by_url.values():
            for team, count in (await store.count_pending_by_team()).items():
                counts[team] = counts.get(team, 0) + count
        return counts

    async def decide(
        self, review_id: str, *, approve: bool, reviewer: str, note: str | None = None
    ) -> Review:
        store, _ = await self.get(review_id)
        return await store.decide(review_id, approve=approve, reviewer=reviewer, note=note)


class ReviewCapacity(Exception):
    """The team has as many pending reviews as it may: the request is denied instead."""


class Gate:
    """What the proxy asks of the reviews: is this exact request decided, and hold it if not.

    Which digests have a review is kept in memory per team, loaded from the
    stores at start and added to as reviews are made, so a request whose
    digest has none (nearly every one) costs no store query; one that has a
    review is read from its store, where the decision may have been made by
    another replica. A review another replica makes for a digest this one has
    not seen reaches this one's index through the store's submit
    notifications (PostgreSQL); missing one (a listener reconnecting), it is
    still found when this replica's own check holds the request, since the
    store keeps one review per digest and hands back the stored one.
    """

    # Reviews loaded per store at start.
    LOAD_LIMIT = 1_000_000

    def __init__(self, reviews: Reviews) -> None:
        self.reviews = reviews
        self._known: dict[str, set[str]] = {}
        for store in reviews.stores:
            # Reviews another replica makes reach this one's index too (PostgreSQL).
            store.on_submit(self._learn)

    def on(self, reviews: Reviews) -> Gate:
        """This gate with the settings of `reviews` (a reload's), on the same stores and index."""
        gate = copy.copy(self)
        gate.reviews = reviews
        return gate

    def _learn(self, team: str, digest: str) -> None:
        self._known.setdefault(team, set()).add(digest)

    async def load(self) -> None:
        for store in self.reviews.stores:
            for review in await store.list(limit=self.LOAD_LIMIT):
                self._known.setdefault(review.team, set()).add(review.digest)

    def may_know(self, team: str) -> bool:
        return bool(self._known.get(team))

    async def decided(self, team: str, digest: str) -> Review | None:
        """The review of exactly this request, if there is one."""
        if digest not in self._known.get(team, ()):
            return None
        return await self.reviews.store(team).by_digest(digest)

    async def hold(self, review: Review) -> Review:
        """Store a new pending review, or return the one already stored for its digest.

        Raises ReviewCapacity when the team already has `max_pending` pending.
        """
        store = self.reviews.store(review.team)
        existing = await store.by_digest(review.digest)
        if existing is None:
            if (
                await store.count_pending(review.team)
                >= self.reviews.settings(review.team).max_pending
            ):
                raise ReviewCapacity(review.team)
            existing = await store.submit(review)
        self._known.setdefault(existing.team, set()).add(existing.digest)
        return existing

    async def wait(self, review: Review) -> Review:
        """The review once decided; the caller bounds the wait."""
        return await self.reviews.store(review.team).wait(review.id)
