"""The interpreter's Lambda tasks sign with the run's key through one client per region and service, as
long as the runtime lasts (moto makes one per task; a new session's client loads the service's model)."""

from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

from pgarena.local.iam import LAMBDA_TASKS, state_machine_signing_as
from pgarena.local.signing import new_credentials


def test_the_interpreters_tasks_share_one_client_signed_with_the_runs_key():
    credentials = new_credentials("123456789012")
    original = lambda_eval_utils.boto_client_for
    # Given the runtime's signing of the interpreter's Lambda tasks
    with state_machine_signing_as(credentials, LAMBDA_TASKS):
        # When two tasks ask for a client, Then they get one, signing with the run's key
        first = lambda_eval_utils.boto_client_for(region="us-east-1", service="lambda")
        assert lambda_eval_utils.boto_client_for(region="us-east-1", service="lambda") is first
        assert first._request_signer._credentials.access_key == credentials.access_key_id
        # And another region gets a client of its own
        assert lambda_eval_utils.boto_client_for(region="eu-west-1", service="lambda") is not first
    # And after the runtime, moto makes its own clients again
    assert lambda_eval_utils.boto_client_for is original
