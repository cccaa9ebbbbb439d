"""openapi.yaml as client generators see it, and a generated client against a real server.

Two widely used generators (versions pinned in scripts/python-requirements.txt) run on the
repository's openapi.yaml into .build/openapi-clients/:

- openapi-python-client, a typed HTTP client: it must print no warning (a warning there means
  an operation or a response it left out), generate every operation, and parse every documented
  answer that has a body into a type.
- datamodel-code-generator, pydantic models: no warning, every schema of components/schemas a
  model, and each problem schema's `code` the enum the document lists.

Then the generated client walks through the API against a real server started on an ephemeral
loopback port with a temporary data folder: sign-up, household, child, transactions, refused
transactions read as typed problems with their `code`, undo, the lists and the document itself;
and a device paired to a child walking its routes (and the closed ones) with its child token.

Run by scripts/client-check.sh (which scripts/test.sh runs); ends with `client: N passed, N failed`.
Environment: KIDLEDGER_SERVER_BIN, the server binary (default .build/debug/kidledger-server).
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "openapi.yaml"
OUT = REPO / ".build" / "openapi-clients"
PACKAGE = "kidledger_client"
METHODS = ("get", "put", "post", "patch", "delete")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(args, cwd=OUT, env=env, capture_output=True, text=True, timeout=300)


class Generated:
    """Both generators' output, made once per run."""

    spec: dict = {}
    client_log = ""
    models_log = ""

    @classmethod
    def make(cls) -> None:
        cls.spec = yaml.safe_load(SPEC.read_text())
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        r = run(["openapi-python-client", "generate", "--path", str(SPEC), "--meta", "none",
                 "--output-path", str(OUT / PACKAGE)])
        cls.client_log = r.stdout + r.stderr
        if r.returncode != 0:
            raise RuntimeError(f"openapi-python-client failed:\n{cls.client_log}")
        r = run(["datamodel-codegen", "--input", str(SPEC), "--input-file-type", "openapi",
                 "--openapi-scopes", "schemas", "paths", "parameters",
                 "--output-model-type", "pydantic_v2.BaseModel", "--formatters", "builtin",
                 "--target-python-version", "3.11", "--output", str(OUT / "kidledger_models.py")])
        cls.models_log = r.stdout + r.stderr
        if r.returncode != 0:
            raise RuntimeError(f"datamodel-codegen failed:\n{cls.models_log}")
        sys.path.insert(0, str(OUT))

    @classmethod
    def operations(cls):
        for path, item in cls.spec["paths"].items():
            for method in METHODS:
                if method in item:
                    yield method, path, item[method]

    @classmethod
    def response(cls, r: dict) -> dict:
        """A response, its `$ref` followed."""
        if "$ref" in r:
            return cls.spec["components"]["responses"][r["$ref"].rsplit("/", 1)[-1]]
        return r


class TypedClientTests(unittest.TestCase):
    def test_no_warning(self) -> None:
        self.assertNotIn("warning", Generated.client_log.lower(), Generated.client_log)
        self.assertNotIn("omitted", Generated.client_log.lower(), Generated.client_log)
        self.assertNotIn("not in path", Generated.client_log.lower(), Generated.client_log)

    def test_every_operation_and_answer_is_typed(self) -> None:
        count = 0
        for method, path, op in Generated.operations():
            tag = op["tags"][0]
            module = importlib.import_module(f"{PACKAGE}.api.{tag}.{snake(op['operationId'])}")
            self.assertTrue(hasattr(module, "sync_detailed"), f"{method} {path}")
            source = Path(module.__file__).read_text()
            for status, r in op["responses"].items():
                count += 1
                block = re.search(rf"if response\.status_code == {status}:\n(.*?)\n\n", source, re.S)
                self.assertIsNotNone(block, f"{method.upper()} {path} {status} is not in the generated client")
                if Generated.response(r).get("content"):
                    self.assertNotIn("None", block.group(1).split("=", 1)[1].split("\n")[0],
                                     f"{method.upper()} {path} {status} has a body but is parsed as nothing")
        self.assertGreater(count, 200)


class ModelTests(unittest.TestCase):
    def test_no_warning(self) -> None:
        self.assertNotIn("warning", Generated.models_log.lower(), Generated.models_log)

    def test_every_schema_is_a_model(self) -> None:
        models = importlib.import_module("kidledger_models")
        for name in Generated.spec["components"]["schemas"]:
            self.assertTrue(hasattr(models, name), f"components/schemas/{name} has no model")

    def test_problem_codes_are_the_documents_enums(self) -> None:
        models = importlib.import_module("kidledger_models")
        schemas = Generated.spec["components"]["schemas"]
        problems = [n for n in schemas if re.fullmatch(r"Problem\d{3}", n)]
        self.assertGreaterEqual(len(problems), 10)
        for name in problems:
            code = getattr(models, name).model_fields["code"].annotation
            self.assertEqual([m.value for m in code], schemas[f"{name}Code"]["enum"], name)


class WalkThroughTests(unittest.TestCase):
    """The generated client against a real server."""

    server: subprocess.Popen | None = None

    @classmethod
    def setUpClass(cls) -> None:
        binary = os.environ.get("KIDLEDGER_SERVER_BIN", str(REPO / ".build" / "debug" / "kidledger-server"))
        cls.data = tempfile.TemporaryDirectory(prefix="kidledger-client-")
        log = Path(cls.data.name) / "server.log"
        with open(log, "w") as out:
            cls.server = subprocess.Popen(
                [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", str(Path(cls.data.name) / "data"),
                 "--openapi", str(SPEC)],
                stdout=out, stderr=subprocess.STDOUT)
        port = None
        deadline = time.monotonic() + 20
        while port is None and time.monotonic() < deadline and cls.server.poll() is None:
            for line in log.read_text().splitlines():
                if '"event":"listening"' in line:
                    port = json.loads(line)["port"]
            time.sleep(0.05)
        if port is None:
            text = log.read_text()
            cls.tearDownClass()
            raise RuntimeError(f"the server did not start listening:\n{text}")
        cls.base = f"http://127.0.0.1:{port}"

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.server is not None:
            cls.server.terminate()
            try:
                cls.server.wait(10)
            except subprocess.TimeoutExpired:
                cls.server.kill()
                cls.server.wait()
        cls.data.cleanup()

    def test_walk_through(self) -> None:
        from kidledger_client import AuthenticatedClient, Client
        from kidledger_client.api.accounts import create_account
        from kidledger_client.api.children import create_child, list_children
        from kidledger_client.api.households import create_household, list_households
        from kidledger_client.api.transactions import (create_transaction, list_child_transactions,
                                                        list_household_transactions, undo_last_transaction)
        from kidledger_client.models import (CreateAccountRequest, CreateChildRequest, CreateHouseholdRequest,
                                             CreateTransactionRequest, Problem404, Problem404Code, Problem409,
                                             Problem409Code, Problem422, Problem422Code, TransactionResult)
        import kidledger_models as models

        handle = f"mum-{uuid.uuid4().hex[:8]}"
        signed_up = create_account.sync_detailed(
            client=Client(base_url=self.base), body=CreateAccountRequest(handle=handle, display_name="Mum"))
        self.assertEqual(signed_up.status_code, 201)
        self.assertEqual(signed_up.parsed.account.handle, handle)
        taken = create_account.sync_detailed(
            client=Client(base_url=self.base), body=CreateAccountRequest(handle=handle, display_name="Again"))
        self.assertIsInstance(taken.parsed, Problem409)
        self.assertEqual(taken.parsed.code, Problem409Code.HANDLE_TAKEN)

        api = AuthenticatedClient(base_url=self.base, token=signed_up.parsed.token.secret)
        home = create_household.sync_detailed(client=api, body=CreateHouseholdRequest(name="Home", currency="EUR")).parsed
        self.assertEqual((home.name, home.currency), ("Home", "EUR"))
        ada = create_child.sync_detailed(home.id, client=api, body=CreateChildRequest(name="Ada")).parsed
        self.assertEqual((ada.name, ada.balance_cents), ("Ada", 0))

        pocket_money = create_transaction.sync_detailed(
            home.id, ada.id, client=api, body=CreateTransactionRequest(amount_cents=500, note="Pocket money"))
        self.assertEqual(pocket_money.status_code, 201)
        self.assertIsInstance(pocket_money.parsed, TransactionResult)
        self.assertEqual(pocket_money.parsed.balance_cents, 500)
        sweets = create_transaction.sync_detailed(
            home.id, ada.id, client=api, body=CreateTransactionRequest(amount_cents=-120, note="Sweets")).parsed
        self.assertEqual(sweets.balance_cents, 380)

        # Refused: a zero amount, a date two days ahead of the server's clock, an unknown child.
        zero = create_transaction.sync_detailed(home.id, ada.id, client=api, body=CreateTransactionRequest(amount_cents=0))
        self.assertEqual(zero.status_code, 422)
        self.assertIsInstance(zero.parsed, Problem422)
        self.assertEqual(zero.parsed.code, Problem422Code.VALIDATION_FAILED)
        self.assertIn("amountCents", zero.parsed.fields.additional_properties)
        ahead = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)
        future = create_transaction.sync_detailed(
            home.id, ada.id, client=api, body=CreateTransactionRequest(amount_cents=100, created_at=ahead))
        self.assertIsInstance(future.parsed, Problem422)
        self.assertEqual(future.parsed.code, Problem422Code.CLOCK_SKEW)
        self.assertEqual(future.parsed.type_, "urn:kidledger:clock_skew")
        self.assertEqual(models.Problem422.model_validate_json(future.content).code, models.Problem422Code.clock_skew)
        nobody = create_transaction.sync_detailed(home.id, uuid.uuid4(), client=api, body=CreateTransactionRequest(amount_cents=1))
        self.assertIsInstance(nobody.parsed, Problem404)
        self.assertEqual(nobody.parsed.code, Problem404Code.NOT_FOUND)

        undone = undo_last_transaction.sync_detailed(home.id, ada.id, client=api)
        self.assertEqual(undone.status_code, 201)
        self.assertEqual(undone.parsed.transaction.reverses_id, sweets.transaction.id)
        self.assertEqual(undone.parsed.balance_cents, 500)

        households = list_households.sync_detailed(client=api).parsed
        self.assertEqual([h.id for h in households.items], [home.id])
        children = list_children.sync_detailed(home.id, client=api).parsed
        self.assertEqual([(c.name, c.balance_cents) for c in children.items], [("Ada", 500)])
        self.assertIsNone(children.next_cursor)
        child_log = list_child_transactions.sync_detailed(home.id, ada.id, client=api).parsed
        self.assertEqual([t.amount_cents for t in child_log.items], [120, -120, 500])
        page = list_household_transactions.sync_detailed(home.id, client=api, limit=2).parsed
        self.assertEqual(len(page.items), 2)
        rest = list_household_transactions.sync_detailed(home.id, client=api, limit=2, cursor=page.next_cursor).parsed
        self.assertEqual([t.id for t in page.items + rest.items], [t.id for t in child_log.items])
        self.assertIsNone(rest.next_cursor)
        models.TransactionList.model_validate_json(
            list_household_transactions.sync_detailed(home.id, client=api).content)

    def test_child_device_walk(self) -> None:
        """A parent pairs a device to Ada; the device, with its child token, reads Ada and asks;
        the parent approves (the payment is UUIDv5(N, "request:" + id)); another child, the
        household and the parents' calls stay closed to it; unpaired, it is signed out."""
        from kidledger_client import AuthenticatedClient, Client
        from kidledger_client.api.accounts import create_account, redeem_link_code
        from kidledger_client.api.children import (create_child, get_child, list_child_devices, list_children,
                                                    pair_child_device, revoke_child_device)
        from kidledger_client.api.households import create_household
        from kidledger_client.api.requests import approve_request, create_request, decline_request, list_requests
        from kidledger_client.api.sync import pull_child_changes
        from kidledger_client.api.transactions import create_transaction, list_child_transactions
        from kidledger_client.models import (ApproveRequestRequest, CreateAccountRequest, CreateChildRequest,
                                             CreateHouseholdRequest, CreateRequestRequest, CreateRequestRequestKind,
                                             CreateTransactionRequest, DeclineRequestRequest, PairChildDeviceRequest,
                                             PairedChildDevice, Problem409, Problem409Code, RedeemLinkCodeRequest,
                                             RequestDecision)

        mum = create_account.sync_detailed(client=Client(base_url=self.base),
                                           body=CreateAccountRequest(handle=f"mum-{uuid.uuid4().hex[:8]}", display_name="Mum")).parsed
        api = AuthenticatedClient(base_url=self.base, token=mum.token.secret)
        home = create_household.sync_detailed(client=api, body=CreateHouseholdRequest(name="Home")).parsed
        ada = create_child.sync_detailed(home.id, client=api, body=CreateChildRequest(name="Ada")).parsed
        bo = create_child.sync_detailed(home.id, client=api, body=CreateChildRequest(name="Bo")).parsed
        create_transaction.sync_detailed(home.id, ada.id, client=api, body=CreateTransactionRequest(amount_cents=1000))

        code = pair_child_device.sync_detailed(home.id, ada.id, client=api,
                                               body=PairChildDeviceRequest(device_name="Ada's tablet"))
        self.assertEqual(code.status_code, 201)
        paired = redeem_link_code.sync_detailed(client=Client(base_url=self.base), body=RedeemLinkCodeRequest(code=code.parsed.code))
        self.assertEqual(paired.status_code, 201)
        self.assertIsInstance(paired.parsed, PairedChildDevice)
        self.assertEqual((paired.parsed.child.child_id, paired.parsed.child.name), (ada.id, "Ada"))
        self.assertEqual(paired.parsed.token.kind.value, "child")
        again = redeem_link_code.sync_detailed(client=Client(base_url=self.base), body=RedeemLinkCodeRequest(code=code.parsed.code))
        self.assertEqual(again.status_code, 404, "a code pairs one device")
        kid = AuthenticatedClient(base_url=self.base, token=paired.parsed.token.secret)

        self.assertEqual(get_child.sync_detailed(home.id, ada.id, client=kid).parsed.balance_cents, 1000)
        self.assertEqual([t.amount_cents for t in list_child_transactions.sync_detailed(home.id, ada.id, client=kid).parsed.items], [1000])
        for closed in (get_child.sync_detailed(home.id, bo.id, client=kid), list_children.sync_detailed(home.id, client=kid),
                       list_child_transactions.sync_detailed(home.id, bo.id, client=kid),
                       list_requests.sync_detailed(home.id, bo.id, client=kid),
                       pull_child_changes.sync_detailed(home.id, bo.id, client=kid),
                       list_child_devices.sync_detailed(home.id, ada.id, client=kid)):
            self.assertEqual(closed.status_code, 404)
        for refused in (create_transaction.sync_detailed(home.id, ada.id, client=kid, body=CreateTransactionRequest(amount_cents=100)),
                        create_request.sync_detailed(home.id, bo.id, client=kid,
                                                     body=CreateRequestRequest(kind=CreateRequestRequestKind.SPEND, amount_cents=1)),
                        pair_child_device.sync_detailed(home.id, ada.id, client=kid)):
            self.assertIn(refused.status_code, (403, 404))

        rid = uuid.uuid4()
        body = CreateRequestRequest(kind=CreateRequestRequestKind.SPEND, amount_cents=450, id=rid, note="book")
        asked = create_request.sync_detailed(home.id, ada.id, client=kid, body=body)
        self.assertEqual(asked.status_code, 201)
        self.assertEqual((asked.parsed.status.value, asked.parsed.created_by), ("pending", None))
        self.assertEqual(create_request.sync_detailed(home.id, ada.id, client=kid, body=body).status_code, 200, "a retry")
        feed = pull_child_changes.sync_detailed(home.id, ada.id, client=kid)
        self.assertEqual(feed.status_code, 200)
        self.assertEqual([r["id"] for r in json.loads(feed.content)["requests"]], [str(rid)])
        self.assertIn(approve_request.sync_detailed(home.id, rid, client=kid, body=ApproveRequestRequest()).status_code, (403, 404))

        decision = approve_request.sync_detailed(home.id, rid, client=api, body=ApproveRequestRequest())
        self.assertEqual(decision.status_code, 200)
        self.assertIsInstance(decision.parsed, RequestDecision)
        payment = uuid.uuid5(uuid.UUID("6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d"), f"request:{rid}")
        self.assertEqual((decision.parsed.transaction.id, decision.parsed.transaction.amount_cents), (payment, -450))
        late = decline_request.sync_detailed(home.id, rid, client=api, body=DeclineRequestRequest(note="no"))
        self.assertIsInstance(late.parsed, Problem409)
        self.assertEqual(late.parsed.code, Problem409Code.REQUEST_DECIDED)
        seen = list_requests.sync_detailed(home.id, ada.id, client=kid).parsed.items
        self.assertEqual([(r.id, r.status.value, r.payment_id) for r in seen], [(rid, "approved", payment)])
        self.assertEqual(get_child.sync_detailed(home.id, ada.id, client=kid).parsed.balance_cents, 550)

        devices = list_child_devices.sync_detailed(home.id, ada.id, client=api).parsed.items
        self.assertEqual([d.device_name for d in devices], ["Ada's tablet"])
        self.assertEqual(revoke_child_device.sync_detailed(home.id, ada.id, devices[0].id, client=api).status_code, 204)
        self.assertEqual(get_child.sync_detailed(home.id, ada.id, client=kid).status_code, 401)

    def test_document_is_served_as_text(self) -> None:
        from kidledger_client import Client
        from kidledger_client.api.operations import openapi

        for headers in ({}, {"Accept": "text/plain"}):
            answer = openapi.sync_detailed(client=Client(base_url=self.base, headers=headers))
            self.assertEqual(answer.status_code, 200)
            self.assertEqual(answer.parsed, SPEC.read_text())


def main() -> int:
    Generated.make()
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(case)
                               for case in (TypedClientTests, ModelTests, WalkThroughTests))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    print(f"client: {result.testsRun - failed} passed, {failed} failed")
    return 0 if failed == 0 and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
