"""Pooled connections held by a lease, for either engine's pool.

A thread (or greenlet) that ends holding a pooled connection hands it back:
a development server starts a thread per request, and under `serve`'s
gevent worker a greenlet can end without reaching the request's teardown.
"""


class _Lease:
    """A thread's hold on its pooled connection. Kept in the thread's own
    state, it is dropped when the thread ends (a development server starts one
    per request): an uncancelled lease then checks the connection back in,
    which rolls back anything left open, so no pool slot leaks."""

    __slots__ = ("pool", "connection")

    def __init__(self, pool, connection):
        self.pool, self.connection = pool, connection

    def cancel(self):
        self.connection = None

    def __del__(self):
        if self.connection is not None:
            self.pool.check_in(self.connection)


class LeasedPool:
    """A pool (either engine's) whose threads hold their connections by a
    _Lease: one that ends holding a connection hands it back."""

    def _connect(self):
        connection = super()._connect()
        self._state.lease = _Lease(self, connection)
        return connection

    def _close(self, connection, close_conn=False):
        lease = getattr(self._state, "lease", None)
        if lease is not None and lease.connection is connection:
            lease.cancel()
        super()._close(connection, close_conn)

    def check_in(self, connection):
        """Return a connection whose thread is gone to the pool."""
        super()._close(connection)
