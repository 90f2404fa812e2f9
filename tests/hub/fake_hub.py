"""A fake Hugging Face Hub for upload and download tests: the one mock of the suite, because the Hub cannot be
reached from the test machines.

huggingface_hub's own HfApi and hf_hub_download code runs end to end; only its HTTP layer is replaced: the
`fake_hub` fixture (conftest.py) hands huggingface_hub an httpx client whose transport is FakeHub, which
answers the endpoints an upload calls (repo creation, branch, preupload, Git LFS batch and object PUT,
commit) and the downloads of what it received, and keeps every byte so a test can check it. Xet transfers
go through hf_xet's own HTTP client, out of reach of that transport, so the fixture turns Xet off and the
weights take the Git LFS path, as they do for any client without hf_xet.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

import httpx2
from huggingface_hub import ModelCard

TOKEN = "hf_test_token"


class FakeHub:
    """The Hub endpoints an upload uses, answered from memory; `files[repo][revision][path]` is bytes."""

    def __init__(self, status: int = 200):
        self.status = status  # anything but 200 answers every request with that error
        self.repos: dict[str, dict] = {}
        self.lfs: dict[str, bytes] = {}
        self.commits: list[dict] = []
        self.validated: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.url.host == "lfs.fake":
            self.lfs[path.strip("/")] = request.content
            return httpx2.Response(200)
        if self.status != 200:
            return httpx2.Response(self.status, json={"error": "Invalid credentials in Authorization header"})
        assert request.headers.get("authorization") == f"Bearer {TOKEN}"
        if path == "/api/validate-yaml":  # the Hub checks a README's metadata before the commit
            try:
                self.validated.append(ModelCard(json.loads(request.content)["content"]).data.to_dict())
            except ValueError as err:
                return httpx2.Response(400, json={"errors": [{"message": str(err)}]})
            return httpx2.Response(200, json={"warnings": []})
        if match := re.fullmatch(r"/(.+?/.+?)/resolve/(.+?)/(.+)", path):
            return self._download(request, *match.groups())
        if path == "/api/repos/create":
            body = json.loads(request.content)
            repo = f"{body['organization']}/{body['name']}"
            private = body.get("visibility") == "private" or body.get("private") is True
            self.repos.setdefault(repo, {"private": private, "files": {"main": {}}})
            return httpx2.Response(200, json={"url": f"https://huggingface.co/{repo}", "name": repo})
        if match := re.fullmatch(r"/api/models/(.+?/.+?)/branch/(.+)", path):
            repo, branch = match.groups()
            files = self.repos[repo]["files"]
            files.setdefault(branch, dict(files["main"]))
            return httpx2.Response(200, json={})
        if match := re.fullmatch(r"/api/models/(.+?/.+?)/preupload/(.+)", path):
            listed = json.loads(request.content)["files"]
            modes = [
                {
                    "path": f["path"],
                    "uploadMode": "lfs" if f["size"] > 10_000 else "regular",
                    "shouldIgnore": False,
                }
                for f in listed
            ]
            return httpx2.Response(200, json={"files": modes, "commitOid": "0" * 40})
        if path.endswith(".git/info/lfs/objects/batch"):
            objects = json.loads(request.content)["objects"]
            actions = [
                {**o, "actions": {"upload": {"href": f"https://lfs.fake/{o['oid']}"}}} for o in objects
            ]
            return httpx2.Response(200, json={"transfer": "basic", "objects": actions})
        if match := re.fullmatch(r"/api/models/(.+?/.+?)/commit/(.+)", path):
            return self._commit(request, *match.groups())
        return httpx2.Response(404, json={"error": f"no fake for {request.method} {path}"})

    def _download(self, request: httpx2.Request, repo: str, revision: str, name: str) -> httpx2.Response:
        """A file of a repository, as hf_hub_download reads it: commit and ETag headers, then the bytes."""
        content = self.repos.get(repo, {}).get("files", {}).get(revision, {}).get(name)
        if content is None:
            return httpx2.Response(404, headers={"X-Error-Code": "EntryNotFound"}, json={"error": "no file"})
        headers = {
            "X-Repo-Commit": "1" * 40,
            "ETag": f'"{hashlib.sha256(content).hexdigest()}"',
            "Content-Length": str(len(content)),
        }
        return httpx2.Response(200, headers=headers, content=b"" if request.method == "HEAD" else content)

    def _commit(self, request: httpx2.Request, repo: str, revision: str) -> httpx2.Response:
        create_pr = request.url.params.get("create_pr") == "1"
        target = "refs/pr/1" if create_pr else revision
        files = self.repos[repo]["files"].setdefault(target, {})
        header = None
        for line in request.content.decode().splitlines():
            item = json.loads(line)
            value = item["value"]
            if item["key"] == "header":
                header = value
            elif item["key"] == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif item["key"] == "lfsFile":
                files[value["path"]] = self.lfs[value["oid"]]
        self.commits.append({"repo": repo, "revision": target, "header": header})
        url = f"https://huggingface.co/{repo}/commit/{'1' * 40}"
        body = {"commitUrl": url, "commitOid": "1" * 40}
        if create_pr:
            body["pullRequestUrl"] = f"https://huggingface.co/{repo}/discussions/1"
        return httpx2.Response(200, json=body)
