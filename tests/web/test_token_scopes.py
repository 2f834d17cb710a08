"""Token scopes (api_tokens.py, api/scopes.py) beyond the access matrix: tokens made
before scopes existed keep doing everything (the migration makes them admin), the tokens
page creates a token of the scope chosen (upload unless another is) and tells to give
debuginfod a read token."""
import re

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from perfweb.captures.api_tokens import create_token, token_digest
from perfweb.captures.models import ApiToken, Membership, Service

pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(target=None):
    """To `target`, or to the newest migration."""
    executor = MigrationExecutor(connection)
    target = target or executor.loader.graph.leaf_nodes("captures")[0]
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


def test_tokens_made_before_scopes_keep_doing_everything(member):
    """A token row written by the schema before scopes, migrated: admin, and its DELETE
    works as it did."""
    disk = MigrationExecutor(connection).loader.disk_migrations
    name = next(n for app, n in disk if app == "captures" and n.endswith("_token_scopes"))
    before = next(d for d in disk[("captures", name)].dependencies if d[0] == "captures")
    try:
        old = _migrate(before)
        key = "pw_" + "k" * 43
        old.get_model("captures", "ApiToken").objects.create(
            user_id=member.pk, name="from 2025", prefix=key[:8], digest=token_digest(key))
    finally:
        _migrate()
    token = ApiToken.objects.get(name="from 2025")
    assert token.scope == ApiToken.ADMIN
    assert create_token(member, "new") and ApiToken.objects.get(name="new").scope == "upload"
    service = Service.objects.create(team=Membership.objects.get(user=member).team,
                                     name="old")
    r = Client().delete(f"/api/v1/services/{service.pk}/", HTTP_AUTHORIZATION=f"Token {key}")
    assert r.status_code == 200 and not Service.objects.exists()


def _new_token(client, **form):
    page = client.post("/account/tokens/", {"name": "t", **form})
    found = re.search(r'id="new-token">(pw_[\w-]+)<', page.content.decode())
    return page, found and found.group(1)


def test_the_tokens_page_makes_the_scope_chosen(client, member):
    client.force_login(member)
    page = client.get("/account/tokens/").content.decode()
    # upload is chosen unless another scope is; debuginfod is shown with a read token
    assert re.search(r'<option value="upload" selected>', page)
    assert "/debuginfod/&lt;read token&gt;" in page
    page, key = _new_token(client)  # a form without a scope: the default
    assert ApiToken.objects.get(digest=token_digest(key)).scope == "upload"
    assert "Your new upload token" in page.content.decode()
    for scope in ("read", "admin"):
        page, key = _new_token(client, scope=scope)
        assert ApiToken.objects.get(digest=token_digest(key)).scope == scope
        assert f"<td>{scope}</td>" in client.get("/account/tokens/").content.decode()
    page, key = _new_token(client, scope="root")
    assert page.status_code == 400 and key is None
    assert "Choose the token&#x27;s scope: read, upload, admin." in page.content.decode()
    assert ApiToken.objects.count() == 3


def test_a_scope_is_one_of_three():
    with pytest.raises(ValueError):
        create_token(None, "t", "root")
