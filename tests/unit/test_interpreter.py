"""moto's interpreter as AWS behaves: a worker's first heartbeat may arrive before the task's wait begins."""

from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackOutcomeSuccess, CallbackPoolManager

from pgarena.local.interpreter import as_aws


def test_a_heartbeat_for_a_scheduled_task_is_accepted_before_its_wait_begins():
    # Given a task token the interpreter created before invoking the launching Lambda
    pool = CallbackPoolManager(activity_store={})
    pool.add("token")
    assert pool.heartbeat("token") is False  # moto as it is: SendTaskHeartbeat answers InvalidToken
    with as_aws():
        # When the worker beats before the Lambda's answer reached the interpreter
        # Then the beat is accepted, as AWS accepts it
        assert pool.heartbeat("token") is True
        # and once the wait begins, beats reach it
        wait = pool.get("token").setup_heartbeat_endpoint(heartbeat_seconds=1)
        assert pool.heartbeat("token") is True and wait.clear_and_wait() is True
    assert pool.heartbeat("unknown") is False  # a token nobody issued is still refused


def test_a_task_that_answered_before_its_wait_began_is_answered_at_once():
    # Given a step whose worker finished before the launching Lambda's answer reached the interpreter
    pool = CallbackPoolManager(activity_store={})
    pool.add("token")
    outcome = CallbackOutcomeSuccess(callback_id="token", output="{}")
    with as_aws():
        assert pool.notify("token", outcome)
        # When the wait begins, Then it has its answer without waiting for a heartbeat
        wait = pool.get("token").setup_heartbeat_endpoint(heartbeat_seconds=3600)
        assert wait.clear_and_wait() is True and pool.get("token").get_outcome() is outcome


def test_outside_the_runtime_moto_is_left_as_it_is():
    pool = CallbackPoolManager(activity_store={})
    pool.add("token")
    with as_aws():
        pass
    assert pool.heartbeat("token") is False
