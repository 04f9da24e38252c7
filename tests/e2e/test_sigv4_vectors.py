# SPDX-License-Identifier: Apache-2.0
"""The proxy's AWS SigV4 signer (proxy/inspect/sigv4_*.h, SPEC §20) against botocore's own
(botocore.auth.SigV4Auth and S3SigV4Auth, Debian's python3-botocore), on the same requests.

Each case is a request as the box sends it (its own Authorization made with a placeholder key,
its X-Amz-Date, headers the proxy does not sign) and the real keys. The proxy's signer runs in
tests/unit/sigv4_cli.cc (BOXPROXY_SIGV4_CLI, one JSON line a request); botocore signs the request
as the proxy would send it (the headers the proxy signs, its X-Amz-Content-Sha256, the query
decoded into botocore's params), with its clock fixed at the case's time. Authorization, X-Amz-Date,
X-Amz-Security-Token and X-Amz-Content-Sha256 must be equal, byte for byte.

The cases: a table of hand-written ones (S3 and not, a session token or not, paths with dots,
double slashes, encoded spaces and UTF-8, queries with repeated names, empty values and names with
no "=", header values with runs of spaces and tabs, repeated headers, every payload form) and
generated ones from a fixed seed. No network: nothing here opens a socket."""

import datetime
import hashlib
import json
import os
import random
import subprocess
import sys
import unittest
from unittest import mock
from urllib.parse import unquote

try:
    import botocore.auth
    import botocore.awsrequest
    import botocore.config
    import botocore.credentials
except ImportError:  # an interpreter of its own (pyenv): Debian's packages are where install-deps put them
    sys.path.append("/usr/lib/python3/dist-packages")
    import botocore.auth
    import botocore.awsrequest
    import botocore.config
    import botocore.credentials

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(os.path.dirname(os.path.dirname(os.environ.get("BOXPROXY", os.path.join(
    HERE, "..", "..", "build", "socketd", "boxproxy")))))
CLI = os.environ.get("BOXPROXY_SIGV4_CLI", os.path.join(BUILD, "tests", "sigv4_cli"))
CLI_TIMEOUT = 60  # seconds for the whole batch: one process signs every case

ACCESS_KEY = "AKIDREALKEY1234567890"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJGMEQCIAsessiontokenexample=="
BOX_KEY = "bxp_aws_key_0123456789abcdef0123456789abcdef"  # what the box signed with: a placeholder
SIGNED_ELSEWHERE = "0" * 64  # the box's signature: never checked, only its form
EMPTY_SHA = hashlib.sha256(b"").hexdigest()
T0 = 1440938160  # 2015-08-30T12:36:00Z, the time of AWS's published test suite

S3_NAMES = ("s3", "s3-outposts", "s3-object-lambda")
REPLACED = ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")


def box_authorization(region, service, date="20150830"):
    return (f"AWS4-HMAC-SHA256 Credential={BOX_KEY}/{date}/{region}/{service}/aws4_request, "
            f"SignedHeaders=host;x-amz-date, Signature={SIGNED_ELSEWHERE}")


def case(method="GET", path="/", query="", headers=(), body="", service="execute-api", region="us-east-1",
         token=False, declared=None, when=T0, host=None):
    """A request as the box sends it. `declared`: the box's X-Amz-Content-Sha256 (None: none)."""
    host = host or f"{service}.{region}.amazonaws.com"
    box = [["Host", host], ["X-Amz-Date", "20150830T000000Z"],
           ["Authorization", box_authorization(region, service)], ["User-Agent", "box-sdk/1.0"],
           ["Accept", "*/*"]]
    if token:
        box.append(["X-Amz-Security-Token", "bxp_aws_token_placeholder"])
    if declared is not None:
        box.append(["X-Amz-Content-Sha256", declared])
    box.extend([list(h) for h in headers])
    return {"method": method, "target": path + ("?" + query if query else ""), "headers": box, "body": body,
            "access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY, "session_token": TOKEN if token else None,
            "time": when, "services": [service], "regions": [region]}


def is_signed(name):
    name = name.lower()
    return name in ("host", "content-type", "content-md5") or name.startswith("x-amz-")


def query_params(query):
    """The query as botocore's params: every name and value percent-decoded once ("+" kept)."""
    params = []
    for piece in query.split("&"):
        if piece:
            name, _, value = piece.partition("=")
            params.append((unquote(name, errors="strict"), unquote(value, errors="strict")))
    return params


def payload_hash(c):
    declared = next((v for n, v in c["headers"] if n.lower() == "x-amz-content-sha256"), None)
    if declared in ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"):
        return declared
    return hashlib.sha256(c["body"].encode()).hexdigest()


def botocore_sign(c):
    """botocore's headers for the request the proxy sends for case `c`."""
    service = c["services"][0]
    s3 = service in S3_NAMES
    declared = next((v for n, v in c["headers"] if n.lower() == "x-amz-content-sha256"), None)
    headers = [(n, v) for n, v in c["headers"] if is_signed(n) and n.lower() not in REPLACED]
    if declared is not None and not s3:  # what the proxy sends on: the box's unsigned form, or the body's hash
        headers.append(("X-Amz-Content-SHA256", payload_hash(c)))
    path, _, query = c["target"].partition("?")
    request = botocore.awsrequest.AWSRequest(method=c["method"], url="https://" + c["headers"][0][1] + path,
                                             params=query_params(query), data=c["body"].encode())
    request.headers = botocore.awsrequest.HTTPHeaders()
    for name, value in headers:  # HTTPHeaders is a multi-map: a repeated name adds, in order
        request.headers[name] = value
    if declared == "UNSIGNED-PAYLOAD" and s3:
        request.context["client_config"] = botocore.config.Config(s3={"payload_signing_enabled": False})
    if declared == "STREAMING-UNSIGNED-PAYLOAD-TRAILER" and s3:
        request.context["checksum"] = {"request_algorithm": {"in": "trailer", "name": "x-amz-checksum-crc32"}}
    credentials = botocore.credentials.Credentials(ACCESS_KEY, SECRET_KEY, TOKEN if c["session_token"] else None)
    signer_class = botocore.auth.S3SigV4Auth if s3 else botocore.auth.SigV4Auth
    signer = signer_class(credentials, service, c["regions"][0])
    now = datetime.datetime.fromtimestamp(c["time"], datetime.timezone.utc).replace(tzinfo=None)
    with fixed_clock(now):
        signer.add_auth(request)
    return {n.lower(): v for n, v in request.headers.items() if n.lower() in REPLACED}, \
        signer.canonical_request(request)


def fixed_clock(now):
    """botocore's clock stopped at `now`: get_current_datetime in newer botocore, utcnow in older."""
    if hasattr(botocore.auth, "get_current_datetime"):
        return mock.patch.object(botocore.auth, "get_current_datetime", return_value=now)
    fake = mock.MagicMock(wraps=datetime)
    fake.datetime = mock.MagicMock(wraps=datetime.datetime)
    fake.datetime.utcnow.return_value = now
    fake.datetime.strptime = datetime.datetime.strptime
    return mock.patch.object(botocore.auth, "datetime", fake)


def run_cli(cases):
    """The proxy's signer on every case: one answer each, in order."""
    lines = "".join(json.dumps(c) + "\n" for c in cases)
    done = subprocess.run([CLI], input=lines, capture_output=True, text=True, timeout=CLI_TIMEOUT, check=True)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if len(answers) != len(cases):
        raise AssertionError(f"sigv4_cli answered {len(answers)} of {len(cases)}: {done.stderr}")
    return answers


def written_cases():
    """The table: each one thing AWS's rules are particular about."""
    meta = ("x-amz-meta-note", "  two   spaces\tand a  tab  ")
    return {
        "get-vanilla": case(),
        "get-vanilla-s3": case(service="s3", path="/bucket/"),
        "query-order": case(query="b=2&a=3&a=1&A=0"),
        "query-repeated-and-empty": case(query="list-type=2&prefix=&acl&prefix=a"),
        "query-encoded": case(query="key=a%20b%2Fc&%C3%A9t%C3%A9=%E2%82%AC&tilde=~x&plus=a+b&star=*"),
        "query-lower-hex": case(query="k=%2f%7e%c3%a9", service="s3", path="/b/k"),
        "header-spaces": case(headers=[meta]),
        "header-repeated": case(headers=[("X-Amz-Meta-A", "one"), ("x-amz-meta-a", " two "),
                                         ("X-AMZ-META-A", "three")]),
        "header-content-type": case(method="POST", body="Action=ListUsers&Version=2010-05-08",
                                    headers=[("Content-Type", "application/x-www-form-urlencoded;  charset=utf-8")],
                                    service="iam", region="us-east-1"),
        "path-dots-non-s3": case(path="/a/./b/../c//d/"),
        "path-dots-s3": case(path="/bucket/a/./b/../c//d/", service="s3"),
        "path-space-non-s3": case(path="/fn/my%20function/invocations", service="lambda"),
        "path-space-s3": case(path="/bucket/my%20photo%281%29.jpg", service="s3"),
        "path-utf8-s3": case(path="/bucket/caf%C3%A9/%E2%82%AC.txt", service="s3"),
        "path-utf8-non-s3": case(path="/caf%C3%A9/%E2%82%AC", service="execute-api"),
        "path-reserved-raw": case(path="/a/b:c@d!e$f'g(h)*i,j;k=l+m", service="execute-api"),
        "path-reserved-raw-s3": case(path="/bucket/b:c@d!e$f'g(h)*i,j;k=l+m", service="s3"),
        "path-tilde-s3": case(path="/bucket/~user/x", service="s3"),
        "session-token": case(token=True),
        "session-token-s3": case(token=True, service="s3", path="/bucket/key"),
        "put-body-s3": case(method="PUT", service="s3", path="/bucket/key", body="hello, world\n",
                            headers=[("Content-Type", "text/plain"), ("Content-MD5", "kE5ogTnKOuKDxzm5f1ZjSQ==")]),
        "put-unsigned-s3": case(method="PUT", service="s3", path="/bucket/key", body="streamed",
                                declared="UNSIGNED-PAYLOAD"),
        "put-trailer-s3": case(method="PUT", service="s3", path="/bucket/key", body="5\r\nhello\r\n0\r\n\r\n",
                               declared="STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                               headers=[("X-Amz-Trailer", "x-amz-checksum-crc32"),
                                        ("X-Amz-Decoded-Content-Length", "5")]),
        "post-declared-hash-non-s3": case(method="POST", service="bedrock", region="eu-west-3",
                                          path="/model/anthropic.claude-v2/invoke", body='{"prompt":"hi"}',
                                          declared="0" * 64, headers=[("Content-Type", "application/json")]),
        "post-unsigned-non-s3": case(method="POST", service="execute-api", body="x", declared="UNSIGNED-PAYLOAD"),
        "delete-s3-token": case(method="DELETE", service="s3", path="/bucket/old%2Fkey", token=True,
                                query="versionId=3%2B4"),
        "head-s3": case(method="HEAD", service="s3", path="/bucket/key"),
        "s3-object-lambda": case(service="s3-object-lambda", path="/olap/a//b"),
        "dynamodb": case(method="POST", service="dynamodb", region="ap-southeast-2", body='{"TableName":"t"}',
                         headers=[("Content-Type", "application/x-amz-json-1.0"),
                                  ("X-Amz-Target", "DynamoDB_20120810.DescribeTable")]),
        "midnight": case(when=T0 - 12 * 3600 - 36 * 60 - 1),  # 23:59:59 the day before
        "port-in-host": case(host="localhost:8443", service="s3", path="/b/k"),
    }


def generated_cases(count, seed=20150830):
    """Requests from a fixed seed: methods, paths, queries, headers, S3 or not, a token or not."""
    rng = random.Random(seed)
    segments = ["a", "b%20c", "%C3%A9", ".", "..", "", "x.y", "~t", "%2F", "q(1)", "%25", "A-Z_09"]
    names = ["a", "b", "A", "prefix", "%C3%A9", "x-id", "empty", "k%20k"]
    values = ["", "1", "2", "a%20b", "%2B", "+", "~", "%E2%82%AC", "a=b"]
    services = [("s3", "us-east-1"), ("s3", "eu-central-1"), ("execute-api", "us-west-2"), ("lambda", "sa-east-1"),
                ("sqs", "us-east-2"), ("bedrock-runtime", "us-east-1")]
    out = {}
    for i in range(count):
        service, region = rng.choice(services)
        path = "/" + "/".join(rng.choice(segments) for _ in range(rng.randint(0, 4)))
        query = "&".join(rng.choice(names) + rng.choice(["=", "=", ""]) + rng.choice(values)
                         for _ in range(rng.randint(0, 4)))
        extra = [(rng.choice(["X-Amz-Meta-K", "x-amz-meta-k", "Content-Type", "X-Custom"]),
                  rng.choice(["v", " v  w ", "a\t\tb", "  ", "é", "x,y"])) for _ in range(rng.randint(0, 3))]
        method = rng.choice(["GET", "PUT", "POST", "DELETE", "HEAD", "PATCH"])
        body = rng.choice(["", "", "body", "{\"k\": \"é\"}"]) if method in ("PUT", "POST", "PATCH") else ""
        declared = rng.choice([None, None, "UNSIGNED-PAYLOAD", "f" * 64]) if body else None
        out[f"generated-{i}"] = case(method=method, path=path, query=query, headers=extra, body=body,
                                     service=service, region=region, token=rng.random() < 0.5, declared=declared,
                                     when=T0 + rng.randint(0, 10 ** 8))
    return out


class SigV4AgainstBotocore(unittest.TestCase):
    def compare(self, cases):
        answers = run_cli(list(cases.values()))
        for (name, c), answer in zip(cases.items(), answers):
            with self.subTest(case=name):
                self.assertNotIn("refusal", answer, f"{name}: {c['target']}")
                ours = {n.lower(): v for n, v in answer["set"]}
                theirs, canonical = botocore_sign(c)
                self.assertEqual(sorted(answer["remove"]), sorted(REPLACED))
                self.assertEqual(ours, theirs, f"{name}\nours:\n{answer['canonical_request']}\n"
                                               f"botocore's:\n{canonical}")

    def test_written_cases(self):
        self.compare(written_cases())

    def test_generated_cases(self):
        self.compare(generated_cases(60))

    def test_the_box_signature_gives_the_scope(self):
        c = case(service="sqs", region="eu-north-1")
        answer = run_cli([c])[0]
        self.assertEqual((answer["region"], answer["service"]), ("eu-north-1", "sqs"))
        self.assertIn("/eu-north-1/sqs/aws4_request,", dict(answer["set"])["Authorization"])

    def test_refusals(self):
        s3 = dict(service="s3", path="/bucket/key")
        cases = {
            "presigned": (case(query="X-Amz-Signature=abc", **s3), "presigned"),
            "presigned-credential-lower": (case(query="x-amz-credential=k%2F2015", **s3), "presigned"),
            "presigned-encoded": (case(query="X-Amz-%53ignature=abc", **s3), "presigned"),
            "presigned-twice-encoded": (case(query="%2558-Amz-Credential=1", **s3), "presigned"),
            "signed-chunks": (case(method="PUT", declared="STREAMING-AWS4-HMAC-SHA256-PAYLOAD", **s3),
                              "signed-chunks"),
            "signed-chunks-trailer": (case(method="PUT", declared="STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
                                           **s3), "signed-chunks"),
            "bad-percent": (case(query="a=%zz", **s3), "bad-target"),
            "fragment": (case(path="/bucket/key#x", service="s3"), "bad-target"),
        }
        sts = case(service="sts")
        sts["services"] = ["s3"]
        cases["sts"] = (sts, "credential-service")
        other_region = case(region="us-west-1")
        other_region["regions"] = ["us-east-1"]
        cases["region"] = (other_region, "region")
        sigv4a = case()
        sigv4a["headers"][2][1] = sigv4a["headers"][2][1].replace("AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256")
        cases["sigv4a"] = (sigv4a, "sigv4a")
        answers = run_cli([c for c, _ in cases.values()])
        for (name, (_, word)), answer in zip(cases.items(), answers):
            with self.subTest(case=name):
                self.assertEqual(answer.get("refusal"), word)


if __name__ == "__main__":
    unittest.main()
