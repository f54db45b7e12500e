"""Credentials inside base64 and in Authorization headers on command lines."""

from __future__ import annotations

import base64
import json

import pytest

from gateway.guard.detectors.secrets import scan
from gateway.guard.detectors.unwrap import find

P = "Xq7!Lm2pR9vT"  # synthetic
TOKEN = "DNxril3RavGD5MfvJ7NScUykT8C8UBkkpdhiG37L"  # synthetic


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


FOUND = {
    "docker config.json": json.dumps(
        {"auths": {"registry.example.com": {"auth": b64(f"deploy:{P}")}}}, indent=2
    ),
    "docker config.json, Docker Hub": json.dumps(
        {"auths": {"https://index.docker.io/v1/": {"auth": b64(f"me:{P}"), "email": "a@b.io"}}}
    ),
    "Kubernetes Secret data": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"
    f"type: Opaque\ndata:\n  username: {b64('admin')}\n  password: {b64(P)}\n",
    "Kubernetes Secret as JSON": json.dumps(
        {"apiVersion": "v1", "kind": "Secret", "data": {"password": b64(P)}}
    ),
    "dockerconfigjson in a Secret": "apiVersion: v1\nkind: Secret\n"
    "type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: "
    + b64(json.dumps({"auths": {"r.io": {"auth": b64(f"u:{P}")}}}))
    + "\n",
    "Basic header": f"Authorization: Basic {b64('admin:' + P)}",
    "basic header, lowercase": f"authorization: basic {b64('admin:' + P)}",
    "curl Bearer": f'curl -H "Authorization: Bearer {TOKEN}" https://api.example.com/v1/x',
    "curl Token": f"curl -H 'Authorization: Token {TOKEN}' https://api.example.com",
    "curl Api-Token": f'curl --header "Authorization: Api-Token {TOKEN}" https://x.example.com',
    "curl Basic": f'curl -H "Authorization: Basic {b64("u:" + P)}" https://x',
    "curl X-API-Key": f'curl -H "X-API-Key: {TOKEN}" https://api.example.com',
    "curl PRIVATE-TOKEN": f'curl --header "PRIVATE-TOKEN: {TOKEN}" https://gitlab.example.com',
    "curl -u": f"curl -u admin:{P} https://x",
    "curl --user": f"curl --user admin:{P} https://x",
    "curl over lines": "curl -X POST \\\n  -H 'Content-Type: application/json' \\\n"
    f'  -H "Authorization: Bearer {TOKEN}" \\\n  https://api.example.com',
    "wget --header": f'wget --header="Authorization: Bearer {TOKEN}" https://x',
    "httpie": f"http GET https://api.example.com Authorization:'Bearer {TOKEN}'",
    "headers dict": f'headers = {{"Authorization": "Bearer {TOKEN}"}}',
    "nginx proxy_set_header": f'proxy_set_header Authorization "Basic {b64("u:" + P)}";',
    "Apache RequestHeader": f'RequestHeader set Authorization "Bearer {TOKEN}"',
    "JSON log line": json.dumps(
        {"msg": "login", "request": {"headers": {"authorization": f"Bearer {TOKEN}"}}}
    ),
    "access log query": f"GET /api/v1/items?api_key={TOKEN}&page=2 HTTP/1.1",
    "env dump": f"HOME=/root\nDATABASE_URL=postgres://app:{P}@db:5432/app\nSHLVL=1",
    "ansible inventory": f"web1 ansible_host=10.0.0.5 ansible_user=admin ansible_ssh_pass={P}",
    "terraform state": json.dumps(
        {"resources": [{"instances": [{"attributes": {"password": P, "username": "admin"}}]}]}
    ),
}

NOT_FOUND = {
    "Bearer $VAR": 'curl -H "Authorization: Bearer $TOKEN" https://x',
    "Bearer ${VAR}": 'curl -H "Authorization: Bearer ${API_TOKEN}" https://x',
    "Bearer <placeholder>": 'curl -H "Authorization: Bearer <your-token>" https://x',
    "Basic <placeholder>": "Authorization: Basic <base64(user:pass)>",
    "Basic of a user alone": f"Authorization: Basic {b64('admin')}",
    "Helm template": "apiVersion: v1\nkind: Secret\ndata:\n"
    "  password: {{ .Values.password | b64enc }}\n",
    "ConfigMap": f"apiVersion: v1\nkind: ConfigMap\ndata:\n  greeting: {b64('hello world')}\n",
    "docker config, no auth": '{"auths":{"ghcr.io":{}},"credsStore":"desktop"}',
    "curl -u placeholder": "curl -u user:password https://x",
    "curl -u variables": 'curl -u "$USER:$PASS" https://x',
    "docs": "Send the header `Authorization: Bearer <token>` with each request.",
    "nginx variable": 'proxy_set_header Authorization "Bearer $upstream_token";',
    "Maven encrypted password": "<password>{COQLCE6DU6GtcS5P=}</password>",
    "Terraform variable": "password = var.db_password",
    "Ansible vault variable": 'ansible_become_pass: "{{ vault_become_pass }}"',
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_wrapped_credential_is_found(name: str) -> None:
    assert find(FOUND[name], scan), name


@pytest.mark.parametrize("name", sorted(NOT_FOUND))
def test_not_a_credential(name: str) -> None:
    assert find(NOT_FOUND[name], scan) == [], name
