"""db.end_request and the pool, on either engine: a request hands its
connection back to the pool, which reuses it (a kept-alive connection idle
under gevent holds no database connection), and a thread that ends holding
one hands it back."""

import gc
import threading

from agent_platform.db import database


def test_a_request_hands_its_connection_back_to_the_pool_which_reuses_it(caller):
    assert caller.get("/v1/me").status_code == 200
    assert database.is_closed() and database._in_use == {}
    [idle] = [connection for _, _, connection in database._connections]
    created = caller.post("/v1/custom-fields", json={"name": "A", "field_type": "text"})
    assert created.status_code == 201, created.get_json()
    assert database.is_closed() and database._in_use == {}
    assert [connection for _, _, connection in database._connections] == [idle]


def test_a_connection_left_in_a_transaction_goes_back_to_the_pool(app, caller):
    def leaves_a_transaction_open():
        database.begin("IMMEDIATE")  # a write transaction, never committed
        return {}

    leaves_a_transaction_open._public = True  # as @blp.public marks it
    app.add_url_rule("/leaves-a-transaction-open", view_func=leaves_a_transaction_open)
    assert caller.get("/leaves-a-transaction-open").status_code == 200
    assert database.is_closed()  # handed back, rolled back by the pool
    assert not database.connection_in_transaction()


def test_a_thread_that_ends_hands_its_connection_back(caller):
    caller.get("/v1/me")
    database.close()  # this thread's own connection goes back: the pool holds one idle
    held = {}

    def one_request():
        assert caller.get("/v1/me").status_code == 200
        held["connection"] = database.connection()

    for _ in range(3):  # as a development server runs each request in a thread of its own
        thread = threading.Thread(target=one_request)
        thread.start()
        thread.join()
        gc.collect()
        assert database._in_use == {}
        idle = [connection for _, _, connection in database._connections]
        assert idle == [held["connection"]]  # the same one each time: nothing leaked
