"""Credential scrubbing per class of shape: secrets removed and clean negatives altered, beside
detect-secrets.

    python benches/bench_scrub_classes.py [--seed 0] [--per-class 0] [--examples 0] [--json]

Every vector is generated here, from the classes of shapes other scanners' suites know and the
grammars the rules document (no other scanner's test file is read or copied): each class of shape is
written in many contexts (chat, code, config, logs, JSON strings, URLs, quoted, glued, repeated), with
random secrets of the class's alphabet, and each class has clean negatives: references, placeholders,
paths, identifiers, prose, public keys, fingerprints, hashes and labelled ids, in the same contexts.

Figures per class:

- *removed*: the share of positives whose every secret is gone from the scrubbed text: not only the
  whole secret, but every 8-character window of it (a part left in clear is a leak);
- *altered*: the share of clean negatives the scrubber changes at all;
- *detect-secrets*: the share of the same strings detect-secrets 1.5 flags as ``detect-secrets scan``
  would in a file (its default plugins and filters, line by line). It only detects, so on positives it
  is an upper bound for a scrubber built on it.

The ``record`` class holds the texts of one record (a label, its properties' values, the turn's chat
messages): the secret is said with its key in one of them and repeated bare in another. It is scrubbed
with :meth:`CredentialScrubber.scrub_record` where the build has it, else text by text (the build
before the every-copy work). Run it with each build's venv to compare them (docs/scrub.md has the figures).
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memdedup.scrub import CredentialScrubber

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Vector:
    """One case: its class, its texts (one, or the texts of one record) and the secrets in them (for a
    negative, none)."""

    cls: str
    texts: tuple[str, ...]
    secrets: tuple[str, ...] = ()

    @property
    def positive(self) -> bool:
        return bool(self.secrets)


# ---------------------------------------------------------------------------------------------------
# Random values
# ---------------------------------------------------------------------------------------------------
def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def token(rng: random.Random, n: int | None = None, extra: str = "") -> str:
    """A random token with an upper-case letter, a lower-case letter and a digit."""
    n = n or rng.randint(20, 48)
    while True:
        value = _pick(rng, ALNUM + extra, n)
        if (
            any(c in UPPER for c in value)
            and any(c in LOWER for c in value)
            and any(c in DIGITS for c in value)
        ):
            if value[0] not in "-_" and value[-1] not in "-_":
                return value


def hexkey(rng: random.Random, n: int = 32) -> str:
    while True:
        value = _pick(rng, HEX, n)
        if any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
            return value


def lowkey(rng: random.Random, n: int = 32) -> str:
    while True:
        value = _pick(rng, LOWER + DIGITS, n)
        if sum(c.isdigit() for c in value) >= 3:
            return value


_SYLLABLES = ("ka", "ro", "mi", "tu", "ve", "lo", "sa", "ni", "pe", "da", "zo", "fi", "ru", "ge", "bo")


def word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))


def password(rng: random.Random) -> str:
    """A password a person picks: words, digits and a symbol, mixed case."""
    shapes = (
        lambda: (
            f"{word(rng)}{rng.randint(10, 99)}-{word(rng).capitalize()}-{word(rng).capitalize()}"
            f"-{rng.randint(10, 99)}"
        ),
        lambda: f"{word(rng).capitalize()}{rng.choice('!@#$%&*')}{rng.randint(1000, 9999)}{word(rng)}",
        lambda: token(rng, rng.randint(12, 18), "!@#%^&*+"),
        lambda: f"{word(rng)}_{word(rng)}.{rng.randint(100, 999)}{rng.choice('!?#')}",
    )
    return rng.choice(shapes)()


def odd(rng: random.Random) -> str:
    """A value full of the bytes a token reader stops at: brackets, braces, $, #, >."""
    parts = [rng.choice(("{{", "{", "}", ")", "(", "[", "]", "${", ">", "<", "$#", "-_")) for _ in range(6)]
    out = ""
    for part in parts:
        out += word(rng) + part
    return out + word(rng) + "}}"


def b64(rng: random.Random, n: int = 40) -> str:
    return base64.b64encode(rng.randbytes(n)).decode()


# Providers for context: names a service's config would carry (lower case).
PROVIDERS = (
    "sumologic", "abuseipdb", "airtable", "algolia", "mailjet", "pagerduty", "zendesk", "launchdarkly",
    "contentful", "mapbox", "twitch", "kraken", "coinbase", "freshbooks", "etsy", "finnhub", "flickr",
    "gitter", "kucoin", "bittrex", "intercom", "looker", "mattermost", "nytimes", "rapidapi", "sendbird",
    "squarespace", "travisci", "codecov", "droneci", "fastly", "beamer", "confluent", "weatherstack",
    "ipstack", "openweather", "shodan", "virustotal", "hunter", "clearbit", "fullstory", "mixpanel",
    "amplitude", "segment", "bugsnag", "rollbar", "loggly", "papertrail", "pusher", "ably",
)  # fmt: skip


def provider(rng: random.Random) -> str:
    return rng.choice(PROVIDERS)


# ---------------------------------------------------------------------------------------------------
# Contexts: a snippet in the places text comes from
# ---------------------------------------------------------------------------------------------------
def contexts(rng: random.Random, snippet: str, multiline_ok: bool = True) -> list[str]:
    one_line = "\n" not in snippet
    out = [
        snippet,
        f"here is what I have in the config:\n{snippet}\nbut the deploy still fails",
        f"```\n{snippet}\n```",
        json.dumps({"role": "user", "content": snippet}),
    ]
    if one_line:
        out += [
            f"2024-05-0{rng.randint(1, 9)}T12:0{rng.randint(0, 9)}:13Z INFO worker[{rng.randint(10, 99)}]: "
            + snippet,
            f"> {snippet}",
            f"Step 3: {snippet} (then restart)",
        ]
    return out if multiline_ok or one_line else out[:1]


# ---------------------------------------------------------------------------------------------------
# Positives, per class
# ---------------------------------------------------------------------------------------------------
def _copies(rng: random.Random) -> Iterator[Vector]:
    for _ in range(4):
        s = token(rng)
        yield Vector("copy", (f"export API_KEY={s} then later I pasted {s} into the form",), (s,))
        p = password(rng)
        yield Vector("copy", (f"my password is {p}, please remember {p}",), (p,))
        s = token(rng, 32)
        yield Vector("copy", (f"token = '{s}' | '{s}'",), (s,))
        s = token(rng)
        yield Vector(
            "copy", (json.dumps({"api_key": s, "note": f"rotated, the old one was not {s[:0]}{s}"}),), (s,)
        )
        s = token(rng, 40)
        yield Vector("copy", (f"SECRET_KEY={s}\n# {s} is the one in prod\nDEBUG=false",), (s,))
        p = password(rng)
        yield Vector("copy", (f"db password: {p}\nI typed ({p}) twice and it worked",), (p,))
        s = hexkey(rng, 40)
        yield Vector("copy", (f'{{"token": "{s}"}} and the CLI printed {s}.',), (s,))


def _record(rng: random.Random) -> Iterator[Vector]:
    for _ in range(6):
        s = token(rng)
        yield Vector(
            "record",
            (
                f"set api_key={s} for the staging service",
                f"the staging service key is live; it starts with {s}",
            ),
            (s,),
        )
        p = password(rng)
        yield Vector("record", ("User's router password noted", f"router: {p}", f"password: {p}"), (p,))
        s = token(rng, 36)
        yield Vector("record", (f"I pasted {s} into the form", f"OPENAI_API_KEY={s}"), (s,))
        s = hexkey(rng, 32)
        yield Vector("record", (json.dumps({"client_secret": s}), f"[{s}] was rejected by the gateway"), (s,))


def _flags(rng: random.Random) -> Iterator[Vector]:
    for _ in range(3):
        p, s = provider(rng), token(rng)
        for snippet in (
            f'--{p}-api-key "{s}"',
            f"--{p}-api-key={s}",
            f"{p} login --token {s}",
            f"--token {s} --verbose",
            f"curl -u admin:{s} https://api.{p}.com/v1/me",
            f"curl --user ops:{s} -X GET https://example.org",
            f'curl -H "X-Api-Key: {s}" https://api.{p}.com/v2/items',
            f"curl -H 'Authorization: Bearer {s}' https://api.example.com",
            f"wget --password={s} ftp://files.example.com/a.tgz",
            f"mysql -u root -p{s} appdb",
            f"docker login -u ci -p {s} registry.example.com",
            f"http -a bob:{s} GET api.example.com/me",
            f"psql 'postgresql://app:{s}@db.internal:5432/app'",
            f"terraform apply -var {p}_token={s}",
        ):
            for text in contexts(rng, snippet):
                yield Vector("flag", (text,), (s,))


def _logs(rng: random.Random) -> Iterator[Vector]:
    for _ in range(3):
        p, s, h, pw = provider(rng), token(rng), lowkey(rng, 40), password(rng)
        for snippet, secret in (
            (
                f"[INFO] Sending request to the {p} API\n[DEBUG] Using Key={s}\n"
                "[INFO] Response received: 200 OK",
                s,
            ),
            (f"[INFO] Sending request to {p} API\n[DEBUG] Using API_KEY={h}\n[INFO] done", h),
            (f'level=info msg="auth ok" token={s} user=dana', s),
            (f"2024-01-02 10:11:12 DEBUG client: apiKey={s}; retrying", s),
            (f"INFO auth: secret={s} scope=read", s),
            (f"WARN using password={pw} from env", pw),
            (f"[{p}] auth_token: {s}", s),
            (f"Authorization=Bearer {s}", s),
        ):
            for text in contexts(rng, snippet):
                yield Vector("log", (text,), (secret,))


def _xml(rng: random.Random) -> Iterator[Vector]:
    for _ in range(3):
        p, s, pw = provider(rng), token(rng), password(rng)
        for snippet, secret in (
            (f'<add key="Password" value="{pw}"/>', pw),
            (f'<add key="{p}ApiKey" value="{s}" />', s),
            (f'<entry name="{p}Token" value="{s}" />', s),
            (f'<property name="db.password" value="{pw}"/>', pw),
            (f'<param name="apiKey" value="{s}"/>', s),
            (f"<{p}Token>{s}</{p}Token>", s),
            (f"<password>{pw}</password>", pw),
            (f"<{p}Token>\n    {s}\n</{p}Token>", s),
            (f"<secret>{{{p} AQAAABAAA {lowkey(rng, 60)}}}</secret>", ""),
            (f'<credentials user="svc" password="{pw}"/>', pw),
        ):
            if not secret:
                secret = snippet.split("AQAAABAAA ")[1].split("}")[0]
            for text in contexts(rng, snippet):
                yield Vector("xml", (text,), (secret,))


def _blocks(rng: random.Random) -> Iterator[Vector]:
    for _ in range(3):
        p, s, pw = provider(rng), token(rng), password(rng)
        data = b64(rng, 24)
        for snippet, secret in (
            (f"{p}_token: |\n  {s}", s),
            (f"{p}_token: >\n  {s}", s),
            (f"{p}_token: '{s}'", s),
            (f"{p.upper()}_API_KEY={s}\n{p.upper()}_URL=https://api.{p}.com", s),
            (f'export {p.upper()}_SECRET="{s}"', s),
            (f"[{p}]\napi_key = {s}\nregion = eu", s),
            (f"//registry.npmjs.org/:_authToken={s}", s),
            (f"ENV {p.upper()}_TOKEN={s}", s),
            (f"env:\n  - name: DB_PASSWORD\n    value: {pw}\n  - name: LOG_LEVEL\n    value: info", pw),
            (
                f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {p}\ntype: Opaque\n"
                f"data:\n  credentials: {data}\n",
                data,
            ),
            (f"kind: Secret\nstringData:\n  {p}-key: {s}\n", s),
            (f"db.password={pw}\ndb.user=app", pw),
            (f"{p}:\n  api_key: {s}\n  region: us-east-1", s),
        ):
            for text in contexts(rng, snippet):
                yield Vector("block", (text,), (secret,))


def _languages(rng: random.Random) -> Iterator[Vector]:
    for _ in range(2):
        p = provider(rng)
        P = p.upper()
        for form in (
            "{i}Token={q}{s}{q}",
            "{i}Token = {q}{s}{q}",
            '{{\n    "{i}_token": "{s}"\n}}',
            '\\{{\\n    \\"{i}_token\\": \\"{s}\\"\\n\\}}',
            "{i}_token: {s}",
            'string {i}Token = "{s}";',
            'var {i}Token string = "{s}"',
            '{i}Token := "{s}"',
            "{i}Token := `{s}`",
            'String {i}Token = "{s}";',
            'var {i}Token = "{s}"',
            'val {i}Token: String = "{s}"',
            '${i}Token .= "{s}"',
            '${i}Token ??= "{s}"',
            "{i}Token = '{s}'",
            "{i}Token,{s},",
            '  "{i}Token" => "{s}"',
            '{I}_TOKEN = "{s}"',
            '{I}_TOKEN := "{s}"',
            '{I}_TOKEN ::= "{s}"',
            '{I}_TOKEN :::= "{s}"',
            '{I}_TOKEN ?= "{s}"',
            '{I}_TOKEN += "{s}"',
            "{i}_token ||= '{s}'",
            'const {i}Token = "{s}";',
            'let {i}_token: &str = "{s}";',
            '{i}_token: str = "{s}"',
            'some_dict["{i}_secret"] = "{s}"',
            '{i}Secret[] = "{s}"',
            '{i}ApiKey = @"{s}";',
            "set {i}_password={s}",
            '{i}.accessId = "{s}"',
            '{i}_access_id = "{s}"',
            "{I}_ACCESS_KEY: {s}",
            "{i}Id1 = '{s}'",
        ):
            for value in (token(rng), lowkey(rng, 32), token(rng, 64, "-_")):
                q = rng.choice(("", '"', "'"))
                text = form.format(i=p, I=P, s=value, q=q)
                yield Vector("language", (text,), (value,))


def _compound(rng: random.Random) -> Iterator[Vector]:
    for _ in range(3):
        for snippet_form in (
            'password_super_secure = "{s}"',
            'secret_value_prod = "{s}"',
            "apiKeyProd: {s}",
            "token_v2 = {s}",
            "SECRET_KEY_BASE={s}",
            'client_secret_2 = "{s}"',
            "db_password_{env} = {s}",
            "private_key_content: {s}",
            'auth_token_staging: "{s}"',
            "API_KEY_{env}={s}",
            "passwordForAdmin = '{s}'",
            "the_secret_sauce_key={s}",
        ):
            value = rng.choice((token(rng), password(rng), lowkey(rng, 24)))
            snippet = snippet_form.format(s=value, env=rng.choice(("PROD", "staging", "EU", "v3")))
            for text in contexts(rng, snippet):
                yield Vector("compound", (text,), (value,))


def _urls(rng: random.Random) -> Iterator[Vector]:
    for _ in range(3):
        pw, s = password(rng).replace("@", "!").replace("/", "+"), token(rng)
        for snippet, secret in (
            (f"postgres://app:{pw}@db.internal:5432/app", pw),
            (f"mongodb+srv://admin:{pw}@cluster0.ab1cd.mongodb.net/test?retryWrites=true", pw),
            (f"Server=tcp:db.example.com,1433;Database=app;User ID=sa;Password={pw};Encrypt=True;", pw),
            (f"redis://:{s}@cache.internal:6379/0", s),
            (f"amqp://guest:{pw}@mq.internal:5672/", pw),
            (f"jdbc:mysql://db.internal:3306/app?user=app&password={pw}&useSSL=true", pw),
            (f"https://api.example.com/v1/items?api_key={s}&page=2", s),
            (f"https://example.com/callback#access_token={s}&token_type=bearer", s),
            (f"https://{s}@github.com/acme/app.git", s),
            (f"DATABASE_URL=mysql://root:{pw}@127.0.0.1/app", pw),
        ):
            for text in contexts(rng, snippet):
                yield Vector("url", (text,), (secret,))


def _provider_context(rng: random.Random) -> Iterator[Vector]:
    for _ in range(3):
        p = provider(rng)
        for secret in (token(rng, 32), hexkey(rng, 32), lowkey(rng, 40), "su" + token(rng, 12)):
            for snippet in (
                f'{p}.accessId = "{secret}"',
                f"{p}:\n  accessId: {secret}\n  region: eu",
                f"{p} key: {secret}",
                f"{p.upper()}_ID={secret}",
                f"Using {p} with ID={secret}",
                f"# {p}\nclient = {secret}",
                f"{p}_client_id: '{secret}'",
                f"The {p} access token {secret} expires tomorrow",
            ):
                for text in contexts(rng, snippet):
                    yield Vector("provider", (text,), (secret,))


def _odd_values(rng: random.Random) -> Iterator[Vector]:
    for _ in range(4):
        v = odd(rng)
        for snippet in (
            f"apikey := {v}",
            f'apikey := "{v}"',
            f"apikey: {v}",
            f"theapikey:{v}",
            f'"theapikey": "{v}"',
            f"my_password = {v}",
            f"some_dict['secret'] = {v}",
            f'apikey = @"{v}"',
            f'apikey[]= "{v}"',
            f'fooapikeyfoo "{v}";',
            f"private_key '{v}';",
            f"the_password={v}\n",
        ):
            yield Vector("odd", (snippet,), (v,))


def _tokens(rng: random.Random) -> Iterator[Vector]:
    """Provider tokens by their documented prefix and length grammar."""
    shapes = (
        lambda: "ghp_" + token(rng, 36),
        lambda: "github_pat_" + token(rng, 22) + "_" + token(rng, 59),
        lambda: "glpat-" + token(rng, 20, "-_"),
        lambda: "xoxb-" + _pick(rng, DIGITS, 12) + "-" + _pick(rng, DIGITS, 13) + "-" + token(rng, 24),
        lambda: "sk-proj-" + token(rng, 64, "-_"),
        lambda: "sk-ant-api03-" + token(rng, 93, "-_") + "AA",
        lambda: "AKIA" + _pick(rng, UPPER + "234567", 16),
        lambda: "AIza" + token(rng, 35, "-_"),
        lambda: "npm_" + token(rng, 36),
        lambda: "pypi-AgEIcHlwaS5vcmc" + token(rng, 60, "-_"),
        lambda: "shpat_" + hexkey(rng, 32),
        lambda: "sk_live_" + token(rng, 24),
        lambda: "SG." + token(rng, 22, "-_") + "." + token(rng, 43, "-_"),
        lambda: "hf_" + token(rng, 34),
        lambda: "dop_v1_" + hexkey(rng, 64),
        lambda: "lin_api_" + token(rng, 40),
        lambda: "PMAK-" + hexkey(rng, 24) + "-" + hexkey(rng, 34),
        lambda: "pscale_tkn_" + token(rng, 43),
        lambda: "shippo_live_" + hexkey(rng, 40),
        lambda: "duffel_test_" + token(rng, 43),
        lambda: "dp.pt." + token(rng, 43),
        lambda: "glc_" + token(rng, 40),
        lambda: "glsa_" + token(rng, 32) + "_" + hexkey(rng, 8),
        lambda: "sntrys_eyJ" + token(rng, 80),
        lambda: "hvs." + token(rng, 90, "-_"),
        lambda: "r8_" + token(rng, 37),
        lambda: "gsk_" + token(rng, 52),
        lambda: "xkeysib-" + hexkey(rng, 64) + "-" + token(rng, 16),
        lambda: "EZAK" + hexkey(rng, 54),
        lambda: "FLWSECK_TEST-" + hexkey(rng, 32) + "-X",
        lambda: "sk-ant-oat01-" + token(rng, 80, "-_"),
        lambda: "fio-u-" + token(rng, 64, "-_"),
        lambda: "rdme_" + lowkey(rng, 70),
        lambda: "tfp_" + token(rng, 59),
        lambda: "pul-" + hexkey(rng, 40),
        lambda: lowkey(rng, 14) + ".atlasv1." + token(rng, 67, "-_"),
    )
    for make in shapes:
        for _ in range(2):
            t = make()
            for snippet in (t, f"use {t} for the CI", f'"token": "{t}"', f"key={t}&x=1", f"({t})"):
                yield Vector("token", (snippet,), (t,))


POSITIVE_CLASSES: dict[str, Callable[[random.Random], Iterator[Vector]]] = {
    "copy": _copies,
    "record": _record,
    "flag": _flags,
    "log": _logs,
    "xml": _xml,
    "block": _blocks,
    "language": _languages,
    "compound": _compound,
    "url": _urls,
    "provider": _provider_context,
    "odd": _odd_values,
    "token": _tokens,
}


# ---------------------------------------------------------------------------------------------------
# Clean negatives, per class
# ---------------------------------------------------------------------------------------------------
def _references(rng: random.Random) -> Iterator[str]:
    for snippet in (
        "api_key = process.env.STRIPE_API_KEY",
        'password = os.environ["DB_PASSWORD"]',
        "token: ${GITHUB_TOKEN}",
        "secret: {{ .Values.secret }}",
        "apiKey: this.apiKey,",
        "apiKey: fs.readFileSync('foo',",
        "$password = $input;",
        "my_password = foo(hey)you",
        "my_password = request.json_body['hey']",
        "login(username=username, password=password)",
        "client_secret = settings.CLIENT_SECRET",
        "token = getToken(user)",
        "password: !vault |",
        'DB_PASSWORD: "{{ db_password }}"',
        "auth_token = config['auth']['token']",
        "secret_key = env('SECRET_KEY')",
        "password = args.password",
        "api_key=$(cat /run/secrets/api_key)",
        "token = credentials.token",
        "password: %(db_password)s",
        "password = self.password",
        "TOKEN=${{ secrets.TOKEN }}",
        'apiKey := os.Getenv("API_KEY")',
        "let token = req.headers.authorization;",
    ):
        yield from contexts(rng, snippet)


def _placeholders(rng: random.Random) -> Iterator[str]:
    for snippet in (
        "api_key: <your-api-key>",
        "password: changeme",
        "token = 'xxxxxxxxxxxxxxxxxxxxxxxx'",
        "SECRET_KEY=********",
        "export OPENAI_API_KEY=sk-...",
        "password: YOUR_PASSWORD_HERE",
        "api_key = 'REPLACE_ME'",
        "token: null",
        'my_password = ""',
        "client_secret = '<redacted>'",
        'theapikey := "somefakekey"',
        "password = 'dummy'",
        "secret: TODO",
        "apiKey: ''",
        "AWS_SECRET_ACCESS_KEY=...",
        "token=<token>",
    ):
        yield from contexts(rng, snippet)


def _paths(rng: random.Random) -> Iterator[str]:
    for snippet in (
        "password_file: /etc/app/secrets/db_password.txt",
        "token: ~/.config/gh/hosts.yml",
        "private_key = ./keys/deploy_ed25519",
        "ssh_key: C:\\Users\\dana\\.ssh\\id_rsa",
        "secret: /run/secrets/app",
        "key_path=/etc/ssl/private/server.key",
        "credentials: ../config/credentials.json",
        "api_key: secrets/prod/api_key",
        "--token-file /var/run/token",
        "token = vault:secret/data/app#token",
    ):
        yield from contexts(rng, snippet)


def _identifiers(rng: random.Random) -> Iterator[str]:
    for snippet in (
        "password_reset_url = reverse('password_reset')",
        "token_type: TokenType.BEARER",
        "secret = SecretManagerServiceClient()",
        "api_key_header_name: X-API-Key",
        "password: PasswordField(required=True)",
        "token = Token.objects.get(user=request.user)",
        "key = event.key",
        "secret_name: prod/app/db",
        "auth: oauth2",
        "password_policy: strict",
        "token_endpoint: https://oauth2.googleapis.com/token",
        "pass: PassThroughHandler",
        "secret: my-app-secret",
        "apiKey: ApiKeyAuth",
    ):
        yield from contexts(rng, snippet)


def _prose(rng: random.Random) -> Iterator[str]:
    for snippet in (
        "password: see the wiki",
        "password: ask Dana",
        "tests pass: all green",
        "exam pass: 85%",
        "token: the one from yesterday",
        "secret: it's in 1Password",
        "the password is stored in the vault, not in the repo",
        "Your API key is shown only once in the dashboard.",
        "pass: boarding pass for flight 221",
        "key: the usual one",
        "password: same as the staging one",
        "auth: handled by the gateway",
        "token limit: 4096 tokens",
        "passphrase: the long one we agreed on",
    ):
        yield from contexts(rng, snippet)


def _public(rng: random.Random) -> Iterator[str]:
    for _ in range(2):
        ssh = "AAAAC3NzaC1lZDI1NTE5AAAAI" + token(rng, 43)
        cert = "\n".join(b64(rng, 48) for _ in range(4))
        for snippet in (
            f"public_key: ssh-ed25519 {ssh} dana@laptop",
            f"ssh-ed25519 {ssh} dana@laptop",
            f"-----BEGIN PUBLIC KEY-----\n{cert}\n-----END PUBLIC KEY-----",
            f"-----BEGIN CERTIFICATE-----\n{cert}\n-----END CERTIFICATE-----",
            f"fingerprint: SHA256:{token(rng, 43, '+/')}",
            f"key fingerprint = {' '.join(_pick(rng, HEX.upper(), 4) for _ in range(10))}",
            f"sha256: {hexkey(rng, 64)}",
            f"commit {hexkey(rng, 40)}",
            f'"integrity": "sha512-{b64(rng, 64)}"',
            f"request_id={hexkey(rng, 32)}",
            f"trace_id: {hexkey(rng, 32)}",
            f"uuid: {hexkey(rng, 8)}-{hexkey(rng, 4)}-4{hexkey(rng, 3)}-a{hexkey(rng, 3)}-{hexkey(rng, 12)}",
            f'etag: "{hexkey(rng, 32)}"',
            f"checksum: md5:{hexkey(rng, 32)}",
            f'public_key_pem = "-----BEGIN PUBLIC KEY-----\\n{b64(rng, 40)}\\n-----END PUBLIC KEY-----"',
            f"publishable key pk_live_{token(rng, 24)}",
            f"image: app@sha256:{hexkey(rng, 64)}",
            f"git checkout {hexkey(rng, 12)}",
        ):
            yield from contexts(rng, snippet)


def _numbers(rng: random.Random) -> Iterator[str]:
    for snippet in (
        "max_tokens=4096",
        "token_count: 1234",
        "password_min_length = 12",
        "key: 42",
        "secret_ttl: 3600",
        "pin_count = 4",
        "token budget: 128000",
    ):
        yield from contexts(rng, snippet)


NEGATIVE_CLASSES: dict[str, Callable[[random.Random], Iterator[str]]] = {
    "reference": _references,
    "placeholder": _placeholders,
    "path": _paths,
    "identifier": _identifiers,
    "prose": _prose,
    "public": _public,
    "number": _numbers,
}


def vectors(seed: int = 0, per_class: int = 0) -> list[Vector]:
    """Every vector, positives then negatives, generated from ``seed`` (``per_class`` > 0 keeps that many
    of each class, evenly spread)."""
    rng = random.Random(seed)
    out: list[Vector] = []
    for make in POSITIVE_CLASSES.values():
        out += _thin(list(make(rng)), per_class)
    for cls, make_neg in NEGATIVE_CLASSES.items():
        out += _thin([Vector(cls, (text,)) for text in make_neg(rng)], per_class)
    return out


def _thin(items: list[Vector], n: int) -> list[Vector]:
    if n <= 0 or len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(k * step)] for k in range(n)]


# ---------------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------------
WINDOW = 8


def leaked(secret: str, texts: tuple[str, ...]) -> bool:
    """Whether any WINDOW-character part of ``secret`` (all of it, when shorter) survives in ``texts``."""
    width = min(WINDOW, len(secret))
    parts = {secret[i : i + width] for i in range(len(secret) - width + 1)}
    return any(part in text for text in texts for part in parts)


def scrub_texts(scrubber: CredentialScrubber, texts: tuple[str, ...]) -> tuple[str, ...]:
    record = getattr(scrubber, "scrub_record", None)
    if record is not None:
        return tuple(record(list(texts)).texts)
    return tuple(scrubber.scrub_text(text).text for text in texts)


def detect_secrets_flags() -> Callable[[tuple[str, ...]], bool] | None:
    try:
        from detect_secrets.core.scan import _process_line_based_plugins
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def flags(texts: tuple[str, ...]) -> bool:
        # What `detect-secrets scan` does with a file's lines (its default plugins and filters), not
        # scan_line's ad-hoc mode, which reports every string with its entropy.
        with default_settings():
            return any(
                True
                for text in texts
                for _ in _process_line_based_plugins(list(enumerate(text.splitlines(), 1)), "snippet.txt")
            )

    return flags


def measure(vs: list[Vector], examples: int = 0) -> dict[str, dict[str, float]]:
    scrubber = CredentialScrubber()
    peer = detect_secrets_flags()
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # n, scrubber hits, peer hits
    shown: dict[str, list[str]] = defaultdict(list)
    for v in vs:
        out = scrub_texts(scrubber, v.texts)
        if v.positive:
            hit = not any(leaked(s, out) for s in v.secrets)
        else:
            hit = out != v.texts
        row = counts[("+" if v.positive else "-") + v.cls]
        row[0] += 1
        row[1] += hit
        row[2] += bool(peer and peer(v.texts))
        if examples and (hit != v.positive) and len(shown[v.cls]) < examples:
            shown[v.cls].append(repr(out if not v.positive else v.texts)[:160])
    table = {
        name: {"n": n, "scrubber": hits / n, "detect_secrets": (peer_hits / n) if peer else -1.0}
        for name, (n, hits, peer_hits) in counts.items()
    }
    for cls, lines in shown.items():
        print(f"  misses in {cls}:", file=sys.stderr)
        for line in lines:
            print(f"    {line}", file=sys.stderr)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-class", type=int, default=0, help="vectors kept per class (0: all)")
    parser.add_argument("--examples", type=int, default=0, help="misses shown per class (on stderr)")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    args = parser.parse_args()
    if args.per_class < 0 or args.examples < 0:
        parser.error("--per-class and --examples are counts (>= 0)")
    table = measure(vectors(args.seed, args.per_class), args.examples)
    if args.json:
        print(json.dumps(table, indent=1, sort_keys=True))
        return
    print(f"{'class':14} {'n':>5}  {'memdedup':>9}  {'detect-secrets':>14}")
    for sign, title in (("+", "secrets removed"), ("-", "clean negatives altered (flagged)")):
        print(title)
        rows = {k[1:]: v for k, v in table.items() if k[0] == sign}
        total_n = sum(int(r["n"]) for r in rows.values())
        for name, row in rows.items():
            peer = f"{row['detect_secrets']:.0%}" if row["detect_secrets"] >= 0 else "n/a"
            print(f"  {name:12} {int(row['n']):5}  {row['scrubber']:9.0%}  {peer:>14}")
        mean = sum(r["scrubber"] * r["n"] for r in rows.values()) / total_n
        peer_mean = sum(r["detect_secrets"] * r["n"] for r in rows.values()) / total_n
        print(f"  {'all':12} {total_n:5}  {mean:9.0%}  {peer_mean:14.0%}")


if __name__ == "__main__":
    main()
