"""Test data for redaction: fake secrets in realistic contexts, and ordinary code that must survive.

Every secret is generated here from a seeded RNG with the provider's real prefix, length and alphabet,
so none of them is a real credential and no secret-shaped literal sits in the repository (push
protection and secret scanners stay quiet). The corpus is the same on every run.

`SECRET_CASES`: (kind, secret, context) where `secret` occurs in `context` and must not survive
`redact(context)`. `kind` is the family the case belongs to (used for per-kind recall).
`ORDINARY_TEXTS`: name -> text of everyday tool output and source code that `redact` should leave alone.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_rng = random.Random(20240917)

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def r(alphabet: str, n: int) -> str:
    """n characters drawn from alphabet (deterministic for the module)."""
    return "".join(_rng.choice(alphabet) for _ in range(n))


def r_b64(nbytes: int) -> str:
    return base64.b64encode(_rng.randbytes(nbytes)).decode()


def r_b64url(nbytes: int) -> str:
    return base64.urlsafe_b64encode(_rng.randbytes(nbytes)).decode().rstrip("=")


def r_pem_body(nbytes: int) -> str:
    body = r_b64(nbytes)
    return "\n".join(body[i : i + 64] for i in range(0, len(body), 64))


def r_jwt() -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = (
        f'{{"sub":"{_rng.randint(10**8, 10**9)}","name":"Jane Doe","iat":{_rng.randint(1_600_000_000, 1_800_000_000)}}}'
    )
    payload = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
    return f"{header}.{payload}.{r_b64url(32)}"


def uuid4() -> str:
    h = r(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


@dataclass(frozen=True)
class SecretCase:
    kind: str
    secret: str
    context: str


def _cases() -> list[SecretCase]:
    cases: list[SecretCase] = []

    def add(kind: str, secret: str, context: str) -> None:
        assert secret in context, (kind, secret)
        cases.append(SecretCase(kind, secret, context))

    # AWS
    akid = "AKIA" + r(UPPER + DIGITS, 16)
    aws_secret = r(B64, 40)
    aws_ini = f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {akid}\naws_secret_access_key = {aws_secret}\n"
    add("aws_access_key_id", akid, aws_ini)
    add("aws_secret_access_key", aws_secret, aws_ini)
    asia = "ASIA" + r(UPPER + DIGITS, 16)
    session_token = "IQoJb3JpZ2luX2VjE" + r(B64, 300)
    sts_secret = r(B64, 40)
    sts = (
        '{\n    "Credentials": {\n'
        f'        "AccessKeyId": "{asia}",\n        "SecretAccessKey": "{sts_secret}",\n'
        f'        "SessionToken": "{session_token}",\n        "Expiration": "2024-09-17T12:00:00+00:00"\n'
        '    },\n    "AssumedRoleUser": {"Arn": "arn:aws:sts::123456789012:assumed-role/dev/cli"}\n}\n'
    )
    add("aws_access_key_id", asia, sts)
    add("aws_secret_access_key", sts_secret, sts)
    add("secret_assignment", session_token, sts)
    exported = r(B64, 40)
    add(
        "aws_secret_access_key",
        exported,
        f"$ export AWS_ACCESS_KEY_ID={'AKIA' + r(UPPER + DIGITS, 16)}\n$ export AWS_SECRET_ACCESS_KEY={exported}\n"
        "$ aws s3 ls\n2024-01-02 10:11:12 my-bucket\n",
    )

    # Google Cloud
    gcp_pem_body = r_b64(1190)
    gcp_pem = "-----BEGIN PRIVATE KEY-----\\n" + gcp_pem_body + "\\n-----END PRIVATE KEY-----\\n"
    key_id = r(HEX, 40)
    sa = (
        '{\n  "type": "service_account",\n  "project_id": "demo-project-123456",\n'
        f'  "private_key_id": "{key_id}",\n  "private_key": "{gcp_pem}",\n'
        '  "client_email": "deployer@demo-project-123456.iam.gserviceaccount.com",\n'
        '  "client_id": "104857600123456789012",\n'
        '  "token_uri": "https://oauth2.googleapis.com/token"\n}\n'
    )
    add("private_key", gcp_pem_body[:200], sa)
    add("secret_assignment", key_id, sa)
    aiza = "AIza" + r(B64URL, 35)
    add(
        "gcp_api_key",
        aiza,
        f'$ curl "https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={aiza}"\n'
        '{\n  "results": [],\n  "status": "REQUEST_DENIED"\n}\n',
    )
    aiza2 = "AIza" + r(B64URL, 35)
    add(
        "gcp_api_key",
        aiza2,
        "const firebaseConfig = {\n"
        f'  apiKey: "{aiza2}",\n  authDomain: "demo-app.firebaseapp.com",\n  projectId: "demo-app",\n}};\n',
    )
    gocspx = "GOCSPX-" + r(B64URL, 28)
    add(
        "gcp_oauth_secret",
        gocspx,
        f'{{"installed":{{"client_id":"1234-abc.apps.googleusercontent.com","client_secret":"{gocspx}",'
        '"redirect_uris":["http://localhost"]}}\n',
    )
    ya29 = "ya29.a0" + r(B64URL, 150)
    add("gcp_access_token", ya29, f"$ gcloud auth print-access-token\n{ya29}\n")

    # Azure
    account_key = r_b64(64)
    add(
        "azure_storage_key",
        account_key,
        "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=demostore;"
        f"AccountKey={account_key};EndpointSuffix=core.windows.net\n",
    )
    sig = r_b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    add(
        "azure_sas",
        sig,
        "Uploading to https://demostore.blob.core.windows.net/backups/db.tar.gz?sv=2022-11-02&ss=b&srt=o"
        f"&sp=rwc&se=2024-12-31T00:00:00Z&st=2024-09-01T00:00:00Z&spr=https&sig={sig}\n",
    )

    # GitHub
    ghp = "ghp_" + r(ALNUM, 36)
    add(
        "github_token",
        ghp,
        f"$ git remote -v\norigin\thttps://octocat:{ghp}@github.com/octocat/hello.git (fetch)\n"
        f"origin\thttps://octocat:{ghp}@github.com/octocat/hello.git (push)\n",
    )
    gho = "gho_" + r(ALNUM, 36)
    add(
        "github_token",
        gho,
        "$ gh auth status\ngithub.com\n  ✓ Logged in to github.com account octocat (keyring)\n"
        f"  - Active account: true\n  - Git operations protocol: https\n  - Token: {gho}\n",
    )
    ghs = "ghs_" + r(ALNUM, 36)
    add("github_token", ghs, f"2024-09-17T10:00:01.123Z ##[debug]GITHUB_TOKEN: {ghs}\n")
    pat = "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59)
    add(
        "github_token",
        pat,
        f'$ curl -s -H "Authorization: token {pat}" https://api.github.com/user\n{{"login": "octocat"}}\n',
    )
    ghu = "ghu_" + r(ALNUM, 36)
    ghr = "ghr_" + r(ALNUM, 76)
    add("github_token", ghu, f'{{"access_token": "{ghu}", "expires_in": 28800, "token_type": "bearer"}}\n')
    add("github_token", ghr, f'{{"refresh_token":"{ghr}","refresh_token_expires_in":15811200}}\n')

    # GitLab
    glpat = "glpat-" + r(B64URL, 20)
    add(
        "gitlab_token",
        glpat,
        f'$ curl --header "PRIVATE-TOKEN: {glpat}" "https://gitlab.example.com/api/v4/projects"\n[]\n',
    )

    # Slack
    xoxb = f"xoxb-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(ALNUM, 24)}"
    add(
        "slack_token",
        xoxb,
        f'from slack_sdk import WebClient\n\nclient = WebClient(token="{xoxb}")\n'
        'client.chat_postMessage(channel="#deploys", text="done")\n',
    )
    xoxp = f"xoxp-{r(DIGITS, 12)}-{r(DIGITS, 12)}-{r(DIGITS, 13)}-{r(HEX, 32)}"
    add("slack_token", xoxp, f"SLACK_USER_TOKEN={xoxp}\nSLACK_CHANNEL=C0123456789\n")
    xoxa = f"xoxa-2-{r(DIGITS, 12)}-{r(DIGITS, 12)}-{r(HEX, 64)}"
    add("slack_token", xoxa, f"legacy workspace token: {xoxa}\n")
    xoxs = f"xoxs-{r(DIGITS, 11)}-{r(DIGITS, 12)}-{r(HEX, 64)}"
    add("slack_token", xoxs, f"2024/09/17 10:01:02 using session {xoxs} for export\n")
    hook_path = f"services/T{r(UPPER + DIGITS, 10)}/B{r(UPPER + DIGITS, 10)}/{r(ALNUM, 24)}"
    add(
        "slack_webhook",
        hook_path,
        f"$ curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deployed\"}}' "
        f"https://hooks.slack.com/{hook_path}\nok\n",
    )

    # Stripe
    sk_live = "sk_live_" + r(ALNUM, 99)
    add("stripe_key", sk_live, f"# .env.production\nSTRIPE_SECRET_KEY={sk_live}\nSTRIPE_MODE=live\n")
    sk_test = "sk_test_" + r(ALNUM, 99)
    add(
        "stripe_key",
        sk_test,
        f"const stripe = require('stripe')('{sk_test}');\n\n"
        "const session = await stripe.checkout.sessions.create({});\n",
    )
    rk_live = "rk_live_" + r(ALNUM, 99)
    add("stripe_key", rk_live, f"[2024-09-17 10:02:03] INFO billing.sync key={rk_live} account=acct_1Nx\n")
    whsec = "whsec_" + r(ALNUM, 32)
    add("stripe_webhook_secret", whsec, f"> Ready! Your webhook signing secret is {whsec} (^C to quit)\n")

    # Anthropic / OpenAI / Hugging Face
    ant = "sk-ant-api03-" + r(B64URL, 93) + "AA"
    add("anthropic_api_key", ant, f"$ env | grep ANTHROPIC\nANTHROPIC_API_KEY={ant}\n")
    ant2 = "sk-ant-api03-" + r(B64URL, 93) + "AA"
    add(
        "anthropic_api_key",
        ant2,
        f"Can you check why this fails? I ran it with my key {ant2} and got a 401 back from the API.\n",
    )
    proj = "sk-proj-" + r(B64URL, 74) + "T3BlbkFJ" + r(B64URL, 74)
    add("openai_api_key", proj, f'import openai\n\nopenai.api_key = "{proj}"\nclient = openai.OpenAI()\n')
    legacy = "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20)
    add(
        "openai_api_key",
        legacy,
        "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: "
        f"{legacy}. You can find your API key at https://platform.openai.com/account/api-keys.'}}}}\n",
    )
    hf = "hf_" + r(UPPER + LOWER, 34)
    add("huggingface_token", hf, f'from huggingface_hub import login\nlogin(token="{hf}")\n')
    hf2 = "hf_" + r(UPPER + LOWER, 34)
    add("huggingface_token", hf2, f"HF_HOME=/home/dev/.cache/huggingface\nHF_TOKEN={hf2}\n")

    # Package registries
    npm = "npm_" + r(ALNUM, 36)
    add("npm_token", npm, f"$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken={npm}\nfund=false\n")
    pypi = "pypi-AgEIcHlwaS5vcmc" + r(B64URL, 160)
    add(
        "pypi_token",
        pypi,
        f"$ cat ~/.pypirc\n[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {pypi}\n",
    )

    # Twilio / SendGrid / Mailgun
    ac_sid = "AC" + r(HEX, 32)
    twilio_token = r(HEX, 32)
    twilio_env = f"TWILIO_ACCOUNT_SID={ac_sid}\nTWILIO_AUTH_TOKEN={twilio_token}\nTWILIO_FROM=+15005550006\n"
    add("twilio", ac_sid, twilio_env)
    add("twilio", twilio_token, twilio_env)
    sk_sid = "SK" + r(HEX, 32)
    add("twilio", sk_sid, f"client = Client('{sk_sid}', api_secret, account_sid)\n")
    sg = f"SG.{r(B64URL, 22)}.{r(B64URL, 43)}"
    add(
        "sendgrid_api_key",
        sg,
        f"# settings/prod.py\nEMAIL_BACKEND = 'sendgrid_backend.SendgridBackend'\nSENDGRID_API_KEY = '{sg}'\n",
    )
    mailgun = "key-" + r(HEX, 32)
    add(
        "mailgun_api_key",
        mailgun,
        f"$ curl -s --user 'api:{mailgun}' https://api.mailgun.net/v3/mg.example.com/messages\n",
    )

    # JWTs
    jwt = r_jwt()
    add("jwt", jwt, f"$ curl -s https://api.example.com/me -H 'Authorization: Bearer {jwt}'\n{{\"id\": 42}}\n")
    jwt2 = r_jwt()
    add(
        "jwt",
        jwt2,
        f'{{"access_token": "{jwt2}", "token_type": "Bearer", "expires_in": 3600, "scope": "read write"}}\n',
    )
    jwt3 = r_jwt()
    add("jwt", jwt3, f"10:04:05 DEBUG auth middleware: verified session jwt={jwt3} user=42\n")

    # Private keys
    rsa_body = r_pem_body(1190)
    add(
        "private_key",
        rsa_body.splitlines()[5],
        f"$ cat ~/.ssh/id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n{rsa_body}\n-----END RSA PRIVATE KEY-----\n",
    )
    ec_body = r_pem_body(121)
    add(
        "private_key",
        ec_body.splitlines()[0],
        f"key.pem:\n-----BEGIN EC PRIVATE KEY-----\n{ec_body}\n-----END EC PRIVATE KEY-----\ncert.pem: ok\n",
    )
    openssh = "b3BlbnNzaC1rZXktdjEAAAAA" + r_pem_body(300).replace("\n", "")
    openssh_block = "\n".join(openssh[i : i + 70] for i in range(0, len(openssh), 70))
    add(
        "private_key",
        openssh_block.splitlines()[2],
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{openssh_block}\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    cut_body = r_pem_body(600)
    add("private_key", cut_body.splitlines()[-1], f"Output (truncated):\n-----BEGIN PRIVATE KEY-----\n{cut_body}\n")
    pgp_body = r_pem_body(500)
    add(
        "private_key",
        pgp_body.splitlines()[3],
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{pgp_body}\n=Ab3X\n-----END PGP PRIVATE KEY BLOCK-----\n",
    )

    # Passwords inside URLs
    pg = r(ALNUM, 24)
    add("url_password", pg, f"DATABASE_URL=postgres://app_user:{pg}@db.internal:5432/app?sslmode=require\n")
    mongo = r(ALNUM + "!*", 18)
    add(
        "url_password",
        mongo,
        f"MongoServerError: bad auth : Authentication failed. uri=mongodb+srv://admin:{mongo}@cluster0.ab1cd.mongodb.net/\n",
    )
    redis = r(ALNUM, 32)
    add("url_password", redis, f"redis_url: redis://:{redis}@cache.internal:6379/0\n")
    amqp = r(LOWER + DIGITS, 16)
    add("url_password", amqp, f"celery worker -b amqp://guest:{amqp}@rabbit:5672// --loglevel=info\n")
    pip_pw = r(ALNUM, 20)
    add(
        "url_password",
        pip_pw,
        f"Looking in indexes: https://deploy:{pip_pw}@pypi.internal.example.com/simple\nCollecting flask\n",
    )

    # Named secrets in env files, shell, YAML, JSON, TOML, code
    db_pw = r(ALNUM + "#%^", 16)
    add("secret_assignment", db_pw, f'$ cat .env\nDEBUG=false\nexport DB_PASSWORD="{db_pw}"\nDB_HOST=localhost\n')
    compose_pw = r(LOWER + DIGITS, 12)
    add(
        "secret_assignment",
        compose_pw,
        "services:\n  db:\n    image: postgres:16\n    environment:\n"
        f"      POSTGRES_USER: app\n      POSTGRES_PASSWORD: {compose_pw}\n    ports:\n      - 5432:5432\n",
    )
    yaml_pw = r(LOWER, 6) + " " + r(LOWER, 5) + " " + r(LOWER, 7)
    add("secret_assignment", yaml_pw, f"database:\n  user: admin\n  password: {yaml_pw}\n  host: db.internal\n")
    json_secret = r(B64URL, 32)
    add(
        "secret_assignment",
        json_secret,
        f'{{\n  "name": "worker",\n  "auth": {{\n    "clientId": "worker-svc",\n'
        f'    "secret": "{json_secret}"\n  }}\n}}\n',
    )
    django = "django-insecure-" + r(LOWER + DIGITS + "!@#$%^&*(-_=+)", 50).replace("'", "")
    add("secret_assignment", django, f"DEBUG = True\nSECRET_KEY = '{django}'\nALLOWED_HOSTS = []\n")
    toml_key = r(HEX, 32)
    add(
        "secret_assignment",
        toml_key,
        f'[providers.weather]\nbase_url = "https://api.weather.example"\napi_key = "{toml_key}"\n',
    )
    k8s = base64.b64encode(r(ALNUM, 18).encode()).decode()
    add(
        "secret_assignment",
        k8s,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\ndata:\n"
        f"  username: YWRtaW4=\n  password: {k8s}\n",
    )
    ps = r(ALNUM, 40)
    add("secret_assignment", ps, f'PS C:\\Users\\dev> $env:SERVICE_API_KEY = "{ps}"\nPS C:\\Users\\dev> npm start\n')
    win = r(ALNUM, 28)
    add("secret_assignment", win, f"C:\\project> set APP_SECRET={win}\nC:\\project> python app.py\n")
    escaped = r(ALNUM, 24)
    add(
        "secret_assignment",
        escaped,
        f'{{"tool_input": {{"command": "echo \'{{\\"password\\": \\"{escaped}\\"}}\' > creds.json"}}}}\n',
    )
    query = r(ALNUM, 40)
    add("secret_assignment", query, f'GET /api/v1/export?format=csv&access_token={query}&page=2 HTTP/1.1" 200 5123\n')
    header_key = r(HEX, 32)
    add(
        "secret_assignment",
        header_key,
        f"$ curl https://api.example.com/v2/items -H 'X-API-Key: {header_key}' -H 'Accept: application/json'\n",
    )
    xml_pw = r(ALNUM, 20)
    add(
        "xml_secret",
        xml_pw,
        "<settings>\n  <servers>\n    <server>\n      <id>internal-releases</id>\n      <username>deploy</username>\n"
        f"      <password>{xml_pw}</password>\n    </server>\n  </servers>\n</settings>\n",
    )
    netrc = r(ALNUM, 30)
    add("netrc_password", netrc, f"$ cat ~/.netrc\nmachine api.example.com\n  login deploy\n  password {netrc}\n")

    # Command lines
    cli = r(ALNUM, 20)
    add(
        "cli_password",
        cli,
        f"$ docker login --username deploy --password {cli} registry.example.com\nLogin Succeeded\n",
    )
    cli_eq = r(ALNUM, 20)
    add("cli_password", cli_eq, f"$ ./manage.py createsuperuser --noinput --password={cli_eq} --username admin\n")
    mysql = r(ALNUM, 14)
    add("cli_password", mysql, f"$ mysqldump -u root -p{mysql} --single-transaction app > dump.sql\n")
    sshpass = r(ALNUM, 14)
    add("cli_password", sshpass, f"$ sshpass -p '{sshpass}' ssh deploy@10.0.0.12 'systemctl restart app'\n")
    pgpass = r(ALNUM, 18)
    add("cli_password", pgpass, f"$ PGPASSWORD={pgpass} psql -h db.internal -U app -c 'select 1'\n")
    curl_user = r(ALNUM, 16)
    add("basic_auth", curl_user, f"$ curl -u admin:{curl_user} https://jenkins.example.com/api/json\n")

    # HTTP headers
    basic = base64.b64encode(f"admin:{r(ALNUM, 16)}".encode()).decode()
    add(
        "auth_header",
        basic,
        "> GET /api/v1/status HTTP/1.1\n> Host: internal.example.com\n"
        f"> Authorization: Basic {basic}\n> User-Agent: curl/8.4.0\n>\n< HTTP/1.1 200 OK\n",
    )
    opaque = r(ALNUM, 48)
    add("bearer_token", opaque, f"request headers: {{'Accept': '*/*', 'Authorization': 'Bearer {opaque}'}}\n")
    cookie = r_b64url(32)
    add(
        "cookie",
        cookie,
        f"< HTTP/2 302\n< location: /dashboard\n< set-cookie: sessionid={cookie}; Path=/; HttpOnly; Secure\n",
    )

    # Other providers
    discord = r(B64URL, 68)
    add("discord_webhook", discord, f"WEBHOOK = 'https://discord.com/api/webhooks/{r(DIGITS, 18)}/{discord}'\n")
    telegram = f"{r(DIGITS, 10)}:AA{r(B64URL, 33)}"
    add("telegram_bot_token", telegram, f"bot = telebot.TeleBot('{telegram}')\n")
    vault = "hvs." + r(B64URL, 90)
    add(
        "vault_token",
        vault,
        f"$ vault login -method=userpass username=dev\nKey                  Value\ntoken                {vault}\n",
    )
    dop = "dop_v1_" + r(HEX, 64)
    add("digitalocean_token", dop, f"$ doctl auth init --access-token {dop}\n")
    shpat = "shpat_" + r(HEX, 32)
    add("shopify_token", shpat, f"SHOPIFY_ACCESS={shpat}\n")
    dapi = "dapi" + r(HEX, 32)
    add("databricks_token", dapi, f"[DEFAULT]\nhost = https://adb-123.4.azuredatabricks.net\ntoken = {dapi}\n")
    age = "AGE-SECRET-KEY-1" + r(UPPER + DIGITS, 58)
    add("age_secret_key", age, f"# created: 2024-09-17T10:00:00Z\n# public key: age1{r(LOWER + DIGITS, 58)}\n{age}\n")

    # No label at all: only entropy can find these
    raw = r(ALNUM, 40)
    add("high_entropy", raw, f"Your new deploy key (shown once):\n\n    {raw}\n\nStore it somewhere safe.\n")
    raw64 = r_b64(33)
    add("high_entropy", raw64, f"INFO  signing request with {raw64} (expires 2024-09-18)\n")
    cases += issue_18_cases()
    cases += issue_36_cases()
    return cases


def issue_18_cases() -> list[SecretCase]:
    """The formats issue 18 found stored raw (observations, memories, memory_chunks, search), each in the context
    it was found in."""
    cases: list[SecretCase] = []

    def add(kind: str, secret: str, context: str) -> None:
        assert secret in context, (kind, secret)
        cases.append(SecretCase(kind, secret, context))

    algolia = r(HEX, 32)
    add("named_env_key", algolia, f"ALGOLIA_APP_ID=H4K2JXQ9ZP\nALGOLIA_ADMIN_KEY={algolia}\n")
    newrelic = "eu01xx" + r(HEX, 34) + "NRAL"
    add("named_env_key", newrelic, f"$ heroku config:get NEW_RELIC_LICENSE_KEY\nNEW_RELIC_LICENSE_KEY={newrelic}\n")
    datadog = r(HEX, 40)
    add("named_env_key", datadog, f"export DD_API_KEY=$DD_KEY\nexport DD_APP_KEY={datadog}\n")
    slack_signing = r(HEX, 32)
    add("named_env_key", slack_signing, f"SLACK_BOT_NAME=deploy-bot\nSLACK_SIGNING={slack_signing}\n")
    hmac = r(HEX, 64)
    add("hmac", hmac, f'POST /webhooks/orders 200\nbody: {{"order": 1182, "hmac": "{hmac}"}}\n')
    apim = r(HEX, 32)
    add("subscription_key", apim, f'{{"endpoint": "https://westeurope.api.cognitive.microsoft.com", '
        f'"Ocp-Apim-Subscription-Key": "{apim}"}}\n')
    apim_header = r(HEX, 32)
    add("subscription_key", apim_header, "curl -s -X POST https://westeurope.tts.speech.microsoft.com/v1 \\\n"
        f"  -H 'Ocp-Apim-Subscription-Key: {apim_header}' -H 'Content-Type: application/ssml+xml'\n")
    sentry = r(HEX, 32)
    add("sentry_dsn", sentry, f'sentry_sdk.init(dsn="https://{sentry}@o{r(DIGITS, 6)}.ingest.us.sentry.io/'
        f'{r(DIGITS, 7)}", traces_sample_rate=0.2)\n')
    amz = r(HEX, 64)
    add("url_signature", amz, f"presigned: https://exports.s3.eu-west-1.amazonaws.com/report.csv?X-Amz-Algorithm="
        f"AWS4-HMAC-SHA256&X-Amz-Date=20240917T101500Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature={amz}\n")
    pgpass = r(ALNUM, 10) + "!" + r(ALNUM, 6)
    add("pgpass", pgpass, f"$ cat ~/.pgpass\ndb.internal.example.com:5432:orders:orders_app:{pgpass}\n")
    plaintext = "prod-" + r(LOWER, 8) + "-" + r(DIGITS, 4)
    encoded = base64.b64encode(plaintext.encode()).decode()
    add("base64_secret", encoded, f"$ echo {encoded} | base64 -d\n")
    first, second = r(ALNUM, 20), r(ALNUM, 20)
    split = f'export STRIPE_SECRET_KEY="sk_live_{first}\\\n{second}"\n'
    add("line_continuation", first, split)
    add("line_continuation", second, split)
    hex_first, hex_second = r(HEX, 24), r(HEX, 24)
    split_hex = f"curl https://api.example.com/v2/orders -H \"X-Api-Key: {hex_first}\\\n{hex_second}\"\n"
    add("line_continuation", hex_first, split_hex)
    add("line_continuation", hex_second, split_hex)
    return cases


_rng36 = random.Random(36)  # issue 36's cases draw from their own generator: the cases above stay as they were


def r36(alphabet: str, n: int) -> str:
    return "".join(_rng36.choice(alphabet) for _ in range(n))


def issue_36_cases() -> list[SecretCase]:
    """The formats issue 36 (item 10) found stored raw: a Twilio auth token beside its account SID, OpenRouter keys,
    bare hex signing secrets, hex API keys under key-like names, `ADMIN_PW=` / `passwort=` / `db_pw:` names,
    passwords given as command-line arguments, an Azure AD client secret whose first characters stayed."""
    cases: list[SecretCase] = []

    def add(kind: str, secret: str, context: str) -> None:
        assert secret in context, (kind, secret)
        cases.append(SecretCase(kind, secret, context))

    sid, token = "AC" + r36(HEX, 32), r36(HEX, 32)
    add("twilio_auth_token", token, f'from twilio.rest import Client\nclient = Client("{sid}", "{token}")\n')
    openrouter = "sk-or-v1-" + r36(HEX, 64)
    add("openrouter_api_key", openrouter, "curl https://openrouter.ai/api/v1/chat/completions \\\n"
        f'  -H "Authorization: Bearer $KEY" -H "X-Title: app"  # key was {openrouter}\n')
    signing = r36(HEX, 64)
    add("hex_secret", signing, f"Webhook created. Your signing secret is {signing} (shown once)\n")
    hex_key = r36(HEX, 32)
    add("hex_secret", hex_key, f"STRIPE_KEY={hex_key}\nSTRIPE_MODE=test\n")
    client_key = r36(HEX, 32)
    add("hex_secret", client_key, f"config = {{'client_key': '{client_key}', 'region': 'eu'}}\n")
    admin_pw, passwort, db_pw = r36(ALNUM, 12), r36(ALNUM, 14), r36(ALNUM, 12)
    add("named_password", admin_pw, f"ADMIN_USER=root\nADMIN_PW={admin_pw}\n")
    add("named_password", passwort, f"benutzer=admin\npasswort={passwort}\n")
    add("named_password", db_pw, f"database:\n  db_user: app\n  db_pw: {db_pw}\n")
    worded = "MySecret" + r36(DIGITS, 4)  # a person's password that holds a secret word is no identifier
    add("named_password", worded, f"$ cat .env.local\nmypassword={worded}\n")
    redis, ssl, store, htpw, seven = (r36(ALNUM, 16), r36(ALNUM, 12), r36(ALNUM, 12), r36(ALNUM, 10), r36(ALNUM, 11))
    add("cli_argument", redis, f"$ redis-cli -h cache.internal -a {redis} ping\nPONG\n")
    add("cli_argument", ssl, f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out cert.p12 -passout pass:{ssl}\n")
    add("cli_argument", store, f"keytool -importkeystore -srckeystore a.p12 -destkeystore app.jks -storepass {store}\n")
    add("cli_argument", htpw, f"htpasswd -b /etc/nginx/.htpasswd admin {htpw}\nAdding password for user admin\n")
    add("cli_argument", seven, f"7z a -p{seven} backup.7z ./data\n")
    ldap = r36(ALNUM, 12)
    add("cli_argument", ldap, f"ldapsearch -x -D cn=admin,dc=example,dc=com -w {ldap} -b dc=example,dc=com\n")
    azure = r36(ALNUM, 3) + r36(DIGITS, 1) + "Q~" + r36(ALNUM + "_~.-", 34)
    add("azure_client_secret", azure, f"Client secret created.\nValue: {azure}\nSecret ID: {uuid4()}\n")
    v1, v2, v3 = r36(ALNUM, 12), r36(ALNUM, 9), r36(ALNUM, 11)
    add("environment", v1, f"HOME=/home/dev\nPATH=/usr/local/bin:/usr/bin:/bin\nLANG=C.UTF-8\nSHELL=/bin/bash\n"
        f"MAIL_PASSWORD={v1}\nPAYMENTS_ID=shop\n")
    add("environment", v2, "environ({'PATH': '/usr/bin:/bin', 'HOME': '/root', 'LANG': 'C.UTF-8', 'TERM': 'xterm', "
        f"'API_TOKEN': '{v2}', 'HOSTNAME': 'web-1'}})\n")
    add("environment", v3, f"services:\n  web:\n    environment:\n      DEBUG: '0'\n      SESSION_KEY: {v3}\n"
        "    image: shop/web:1.4\n")
    b64 = base64.b64encode(r36(ALNUM, 14).encode()).decode()
    add("environment", b64, f"apiVersion: v1\ndata:\n  api-token: {b64}\n  username: YWRtaW4=\nkind: Secret\n"
        "metadata:\n  name: shop-db\ntype: Opaque\n")
    return cases


def issue_36_ordinary() -> dict[str, str]:
    """Output where hex strings are hashes and ids, not secrets (issue 36 item 10's false-positive check), and
    `NAME=value` lines that are not an environment."""
    sha256 = r36(HEX, 64)
    return {
        "sha256sum": f"{sha256}  dist/agentmem-0.9.0.tar.gz\n{r36(HEX, 64)}  dist/agentmem-0.9.0-py3-none-any.whl\n",
        "git log secret": f"commit {r36(HEX, 40)}\n\n    Rotate the webhook secret handling (see {r36(HEX, 40)})\n",
        "docker digest": f"Digest: sha256:{r36(HEX, 64)}\nStatus: Downloaded newer image for postgres:16\n",
        "go build": "GOOS=linux GOARCH=amd64 go build -o bin/app-linux-amd64 ./cmd/app\n"
                    "GOOS=darwin GOARCH=arm64 go build -o bin/app-darwin-arm64 ./cmd/app\n"
                    "GOOS=windows GOARCH=amd64 go build -o bin/app.exe ./cmd/app\nCGO_ENABLED=0\n"
                    "API_KEY_HEADER=X-Key\n",
        "settings schema": "PAI_DIR: Root directory for all configuration\nMAX_TOKENS: Maximum tokens for responses\n"
                           "API_KEY: Your provider key (required)\nMODEL: Default model\nTIMEOUT: Seconds\n",
        "uuids": f"created job {uuid4()}\nrequest_id={uuid4()} trace={r36(HEX, 32)}\n",
    }


@dataclass(frozen=True)
class ToolCase:
    """A tool call whose output holds a secret that no text pattern can see: only the command (or the tool's input)
    says that the output is a deny-listed file's content, or decoded plaintext."""

    name: str
    tool: str
    tool_input: dict
    output: str
    secret: str


def issue_36_tool_cases() -> list[ToolCase]:
    """Tool calls of issue 36 (item 10) whose output is secret by where it came from: deny-listed files named
    another way (`.env-prod`, `.env~`, a glob, `.flaskenv`), commands that print the environment or a store of
    secrets, and one that makes a key."""
    key, pw, hexkey = r36(ALNUM, 26), r36(ALNUM, 13), r36(HEX, 64)
    env = f"PATH=/usr/bin\nHOME=/root\nPAYMENTS={key}\n"
    return [
        ToolCase("cat .env-prod", "Bash", {"command": "cat .env-prod"}, f"UPSTREAM={pw}\n", pw),
        ToolCase("cat .env~", "Bash", {"command": "cat .env~"}, f"UPSTREAM={pw}\n", pw),
        ToolCase("cat .en?", "Bash", {"command": "cat .en?"}, f"UPSTREAM={pw}\n", pw),
        ToolCase("cat .e*", "Bash", {"command": "head .e*"}, f"UPSTREAM={pw}\n", pw),
        ToolCase("cat .flaskenv", "Bash", {"command": "cat .flaskenv"}, f"UPSTREAM={pw}\n", pw),
        ToolCase("printenv", "Bash", {"command": "printenv"}, env, key),
        ToolCase("env | sort", "Bash", {"command": "env | sort"}, env, key),
        ToolCase("docker compose config", "Bash", {"command": "docker compose config"},
                 f"services:\n  web:\n    image: shop\n    ports:\n      - 8080:80\n  db:\n    command: -p {pw}\n", pw),
        ToolCase("kubectl get secret", "Bash", {"command": "kubectl get secret shop -o yaml"},
                 f"apiVersion: v1\ndata:\n  upstream: {base64.b64encode(pw.encode()).decode()}\n", pw),
        ToolCase("print(os.environ)", "Bash", {"command": "python -c 'import os; print(os.environ)'"},
                 f"environ({{'PAYMENTS': '{key}'}})\n", key),
        ToolCase("openssl rand", "Bash", {"command": "openssl rand -hex 32"}, f"{hexkey}\n", hexkey),
    ]


def tool_cases() -> list[ToolCase]:
    key, plain, pw, line = r(ALNUM, 28), "s3cr3t-" + r(LOWER, 10), r(ALNUM, 14), r(LOWER + DIGITS, 22)
    return [
        ToolCase("cat .env", "Bash", {"command": "cat .env"}, f"DEBUG=1\nPAYMENTS={key}\n", key),
        ToolCase("head .env.production", "Bash", {"command": "head -n 3 config/.env.production"},
                 f"APP=shop\nUPSTREAM={pw}\n", pw),
        ToolCase("source .env", "Bash", {"command": "source .env && echo $PAYMENTS"}, f"{key}\n", key),
        ToolCase("cat .pgpass", "Bash", {"command": "cat ~/.pgpass"}, f"localhost:*:*:app:{pw}\n", pw),
        ToolCase("less id_rsa", "Bash", {"command": "tail -n 2 ~/.ssh/id_rsa"}, f"{line}\n-----END\n", line),
        ToolCase("base64 -d", "Bash", {"command": "kubectl get secret db -o jsonpath='{.data.pw}' | base64 -d"},
                 plain, plain),
        ToolCase("grep content of .env", "Grep", {"pattern": "PAYMENTS", "output_mode": "content", "-n": True},
                 f"src/billing.py:12:key = os.environ['PAYMENTS']\nconfig/.env:4:PAYMENTS={key}\n", key),
        ToolCase("grep in .env", "Grep", {"pattern": "UPSTREAM", "path": ".env.local", "output_mode": "content"},
                 f"UPSTREAM={pw}\n", pw),
        ToolCase("rg in bash", "Bash", {"command": "rg -n UPSTREAM ."}, f"./deploy/.env.staging:2:UPSTREAM={pw}\n", pw),
    ]


SECRET_CASES: list[SecretCase] = _cases()


def _lockfile_integrity() -> str:
    return "sha512-" + r_b64(64)


def _sha() -> str:
    return r(HEX, 40)


def _ordinary() -> dict[str, str]:
    texts: dict[str, str] = {}
    texts["package-lock.json"] = (
        "{\n"
        '  "name": "web-app",\n  "version": "1.4.2",\n  "lockfileVersion": 3,\n  "requires": true,\n'
        '  "packages": {\n'
        + "".join(
            f'    "node_modules/{name}": {{\n'
            f'      "version": "{ver}",\n'
            f'      "resolved": "https://registry.npmjs.org/{name}/-/{name.split("/")[-1]}-{ver}.tgz",\n'
            f'      "integrity": "{_lockfile_integrity()}",\n'
            f'      "dev": true,\n      "license": "MIT"\n    }},\n'
            for name, ver in [
                ("@babel/code-frame", "7.24.7"),
                ("@typescript-eslint/eslint-plugin", "8.5.0"),
                ("eslint-plugin-react-hooks", "4.6.2"),
                ("postcss-value-parser", "4.2.0"),
                ("@jridgewell/trace-mapping", "0.3.25"),
            ]
        )
        + "  }\n}\n"
    )
    texts["yarn.lock"] = (
        "# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.\n# yarn lockfile v1\n\n"
        + "".join(
            f'"{name}@^{ver}":\n  version "{ver}"\n'
            f'  resolved "https://registry.yarnpkg.com/{name}/-/{name.split("/")[-1]}-{ver}.tgz#{_sha()}"\n'
            f'  integrity {_lockfile_integrity()}\n  dependencies:\n    tslib "^2.6.2"\n\n'
            for name, ver in [("@ampproject/remapping", "2.3.0"), ("ansi-styles", "4.3.0"), ("chokidar", "3.6.0")]
        )
    )
    texts["pnpm-lock.yaml"] = "lockfileVersion: '9.0'\n\npackages:\n\n" + "".join(
        f"  {name}@{ver}:\n    resolution: {{integrity: {_lockfile_integrity()}}}\n    engines: {{node: '>=14'}}\n\n"
        for name, ver in [("picocolors", "1.1.0"), ("source-map-js", "1.2.1"), ("nanoid", "3.3.7")]
    )
    texts["git log"] = "".join(
        f"commit {_sha()}\nAuthor: Jane Developer <jane@example.com>\nDate:   Tue Sep 17 10:0{i}:00 2024 +0200\n\n"
        f"    {msg}\n\n"
        for i, msg in enumerate(
            [
                "Fix race in WorkerLeaseManager.renewLeaseIfHeld when the clock jumps",
                "Merge pull request #1423 from jane/feature/incremental-session-summaries",
                "Bump @typescript-eslint/eslint-plugin from 8.4.0 to 8.5.0",
                f'Revert "Use sha256 content hashes"\n\n    This reverts commit {_sha()}.',
            ]
        )
    )
    texts["git log --oneline"] = (
        "".join(
            f"{r(HEX, 7)} {m}\n"
            for m in [
                "(HEAD -> main, origin/main) Add retention sweep dry-run report",
                "Refactor retrieval fusion weights into settings",
                "tests: cover CJK tokenizer edge cases",
                "docs: explain hook install --dry-run",
            ]
        )
        + f"$ git rev-parse HEAD\n{_sha()}\n$ git describe --tags\nv0.3.1-14-g{r(HEX, 7)}\n"
    )
    ids = [uuid4() for _ in range(6)]
    texts["uuids.json"] = (
        '{"items": [\n'
        + ",\n".join(
            f'  {{"id": "{u}", "session_id": "{uuid4()}", "trace_id": "{r(HEX, 32)}", '
            f'"request_id": "req_{r(HEX, 24)}", "created_at": "2024-09-17T10:00:00Z"}}'
            for u in ids
        )
        + "\n]}\n"
    )
    texts["kubectl"] = (
        "$ kubectl get pods -n prod\nNAME                                READY   STATUS    RESTARTS   AGE\n"
        f"api-gateway-7d4b9c8f6-x2x9z         1/1     Running   0          3d4h\n"
        f"session-summarizer-5f6d7c9b8-qwe7r   1/1     Running   2          11h\n"
        f"$ kubectl get pod api-gateway-7d4b9c8f6-x2x9z -o jsonpath='{{.metadata.uid}}'\n{uuid4()}\n"
        "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
        "        - name: api\n          env:\n            - name: DB_PASSWORD\n              valueFrom:\n"
        "                secretKeyRef:\n                  name: db-credentials\n                  key: password\n"
    )
    texts["service.py"] = """from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass


@dataclass
class ConnectionSettings:
    host: str
    username: str
    password: str
    api_key: str | None = None
    token: Optional[str] = None
    secret_key: SecretStr = SecretStr("")


def build_authenticated_session_from_environment_variables(settings: ConnectionSettings) -> Session:
    password = os.environ["DB_PASSWORD"]
    token = get_access_token_for_service_account(settings.username)
    api_key = settings.api_key or os.getenv("SERVICE_API_KEY")
    session = Session(host=settings.host, password=password, token=token, api_key=api_key)
    session.headers["Authorization"] = f"Bearer {token}"
    session.headers["X-Request-Signature"] = hashlib.sha256(password.encode()).hexdigest()
    return session


def test_incremental_summarizer_skips_already_summarized_observations_after_restart(tmp_path):
    secret = generate_secret()
    max_tokens = 4096
    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    password_min_length = 12
    assert validate_password_strength(password, min_length=password_min_length)
"""
    texts["client.ts"] = """import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { useAuthenticatedSessionContextProvider } from "../../hooks/useAuthenticatedSessionContextProvider";

export interface ApiClientOptions {
  baseUrl: string;
  token: string;
  apiKey?: string;
  refreshTokenExpiresInSeconds: number;
}

export class ConsolidationWorkerLeaseRenewalScheduler {
  private readonly token: string;

  constructor(private readonly options: ApiClientOptions) {
    this.token = options.token;
  }

  async fetchWithRetry(path: string): Promise<Response> {
    const headers = { Authorization: `Bearer ${this.token}`, "Content-Type": "application/json" };
    const password = await this.passwordProvider.resolveCurrentPassword();
    const token = localStorage.getItem("token");
    const secret = process.env.WEBHOOK_SECRET ?? "";
    return fetch(`${this.options.baseUrl}${path}`, { headers, credentials: "include" });
  }
}
"""
    texts["Dockerfile"] = (
        f"FROM python:3.11-slim@sha256:{r(HEX, 64)} AS build\n"
        "WORKDIR /app\nCOPY requirements.txt .\nRUN pip install --no-cache-dir --require-hashes -r requirements.txt\n"
        f"FROM gcr.io/distroless/python3-debian12@sha256:{r(HEX, 64)}\n"
        "COPY --from=build /app /app\nENV PYTHONUNBUFFERED=1\nUSER nonroot\n"
        'ENTRYPOINT ["python", "-m", "agentmem_mcp.cli", "serve"]\n'
    )
    texts["requirements.txt"] = "".join(
        f"{pkg} \\\n    --hash=sha256:{r(HEX, 64)} \\\n    --hash=sha256:{r(HEX, 64)}\n"
        for pkg in ["anyio==4.4.0", "certifi==2024.8.30", "charset-normalizer==3.3.2"]
    )
    texts["go.sum"] = "".join(
        f"{mod} {ver} h1:{r_b64(32)}\n{mod} {ver}/go.mod h1:{r_b64(32)}\n"
        for mod, ver in [("github.com/stretchr/testify", "v1.9.0"), ("golang.org/x/sys", "v0.25.0")]
    )
    texts["Cargo.lock"] = "".join(
        f'[[package]]\nname = "{name}"\nversion = "{ver}"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
        f'checksum = "{r(HEX, 64)}"\n\n'
        for name, ver in [("serde_json", "1.0.128"), ("tokio", "1.40.0")]
    )
    texts["poetry.lock"] = (
        '[[package]]\nname = "httpx"\nversion = "0.27.2"\nfiles = [\n'
        f'    {{file = "httpx-0.27.2-py3-none-any.whl", hash = "sha256:{r(HEX, 64)}"}},\n'
        f'    {{file = "httpx-0.27.2.tar.gz", hash = "sha256:{r(HEX, 64)}"}},\n]\n'
    )
    texts["pytest output"] = (
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0\n"
        "rootdir: /home/dev/projects/agentmem\nconfigfile: pyproject.toml\n"
        "plugins: timeout-2.3.1, hypothesis-6.112.1, anyio-4.4.0\n"
        "collected 214 items\n\n"
        "tests/test_retrieval_fusion.py ........................                          [ 11%]\n"
        "tests/test_consolidation_incremental_summaries.py ...F....                        [ 15%]\n\n"
        "=================================== FAILURES ===================================\n"
        "___ test_incremental_summarizer_skips_already_summarized_observations_after_restart ___\n\n"
        "tmp_path = PosixPath('/tmp/pytest-of-dev/pytest-42/test_incremental_summarizer_sk0')\n\n"
        "    def test_incremental_summarizer_skips_already_summarized_observations_after_restart(tmp_path):\n"
        ">       assert summary.source_observation_ids == [1, 2, 3]\n"
        "E       AssertionError: assert [1, 2] == [1, 2, 3]\n\n"
        "tests/test_consolidation_incremental_summaries.py:87: AssertionError\n"
        "FAILED tests/test_consolidation_incremental_summaries.py::test_incremental_summarizer_skips_already_"
        "summarized_observations_after_restart - AssertionError\n"
        "======================== 1 failed, 213 passed in 4.21s =========================\n"
    )
    texts["traceback"] = (
        "Traceback (most recent call last):\n"
        '  File "/home/dev/.local/share/virtualenvs/agentmem-x7Kq2LmP/lib/python3.11/site-packages/'
        'anyio/_backends/_asyncio.py", line 2177, in run_sync_in_worker_thread\n'
        "    return await future\n"
        '  File "/home/dev/projects/agentmem/agentmem_mcp/index/fulltext.py", line 88, in drain_outbox\n'
        "    writer = self._index.writer(heap_size=50_000_000)\n"
        "ValueError: Failed to acquire Lockfile: LockBusy. Some other process holds the writer lock.\n"
    )
    texts["minified.js"] = (
        '!function(e,t){"object"==typeof exports&&"undefined"!=typeof module?module.exports=t():"function"=='
        'typeof define&&define.amd?define(t):(e="undefined"!=typeof globalThis?globalThis:e||self).dayjs=t()}'
        '(this,function(){"use strict";var e=1e3,t=6e4,n=36e5,r="millisecond",i="second",s="minute",u="hour",'
        'a="day",o="week",c="month",f="quarter",h="year",d="date",l="Invalid Date",$=/^(\\d{4})[-/]?(\\d{1,2})?'
        "[-/]?(\\d{0,2})[Tt\\s]*(\\d{1,2})?:?(\\d{1,2})?:?(\\d{1,2})?[.:]?(\\d+)?$/,y=/\\[([^\\]]+)]|Y{1,4}|M{1,4}"
        '|D{1,2}|d{1,4}|H{1,2}|h{1,2}|a|A|m{1,2}|s{1,2}|Z{1,2}|SSS/g;var B="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef'
        'ghijklmnopqrstuvwxyz0123456789+/";return{name:"en",weekdays:"Sunday_Monday_Tuesday_Wednesday_Thursday'
        '_Friday_Saturday".split("_")}});\n//# sourceMappingURL=dayjs.min.js.map\n'
    )
    texts["styles.css"] = (
        ":root {\n  --color-primary: #1e40af;\n  --color-surface-elevated-background: #f8fafc;\n"
        "  --shadow-elevation-medium: 0 4px 6px -1px rgb(0 0 0 / 0.1), 0 2px 4px -2px rgb(0 0 0 / 0.1);\n}\n"
        ".session-summary-card__header--collapsed { color: #0f172acc;"
        " transition: transform 150ms cubic-bezier(0.4, 0, 0.2, 1); }\n"
        '<div class="flex items-center justify-between gap-4 rounded-lg border border-slate-200 px-4 py-2">\n'
    )
    texts["pip install"] = (
        "Collecting numpy>=1.26\n  Downloading numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
        ".metadata (61 kB)\nCollecting onnxruntime>=1.17\n  Using cached onnxruntime-1.19.2-cp311-cp311-"
        "manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl (13.2 MB)\n"
        "Successfully installed numpy-1.26.4 onnxruntime-1.19.2 tokenizers-0.20.0 huggingface-hub-0.25.0\n"
    )
    texts["npm install"] = (
        "npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory.\n"
        "added 1432 packages, and audited 1433 packages in 41s\n\n"
        "248 packages are looking for funding\n  run `npm fund` for details\n\nfound 0 vulnerabilities\n"
    )
    texts["env"] = (
        "SHELL=/bin/zsh\nPWD=/home/dev/projects/agentmem\nOLDPWD=/home/dev\nHOME=/home/dev\nLANG=en_US.UTF-8\n"
        "PATH=/home/dev/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
        "SSH_AUTH_SOCK=/tmp/ssh-XXXXqJ3kLm/agent.48213\nXAUTHORITY=/run/user/1000/gdm/Xauthority\n"
        "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus\n"
        "LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01\n"
        "GIT_ASKPASS=/usr/share/code/resources/app/extensions/git/dist/askpass.sh\n"
        "VSCODE_GIT_IPC_HANDLE=/run/user/1000/vscode-git-2b8a9c3e1f.sock\nTERM=xterm-256color\n"
        "VIRTUAL_ENV=/home/dev/projects/agentmem/.venv\nPYTHONDONTWRITEBYTECODE=1\n"
    )
    texts["github-actions.yml"] = (
        "name: release\non:\n  push:\n    tags: ['v*']\njobs:\n  publish:\n    runs-on: ubuntu-latest\n"
        "    permissions:\n      id-token: write\n    steps:\n"
        f"      - uses: actions/checkout@{_sha()} # v4.1.7\n"
        "      - uses: docker/login-action@v3\n        with:\n          username: ${{ vars.DOCKERHUB_USER }}\n"
        "          password: ${{ secrets.DOCKERHUB_TOKEN }}\n"
        '      - run: curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/repos/o/r/releases\n'
        "        env:\n          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n"
    )
    texts["openapi.json"] = (
        '{"components": {"schemas": {"LoginRequest": {"type": "object", "required": ["username", "password"], '
        '"properties": {"username": {"type": "string"}, "password": {"type": "string", "format": "password", '
        '"minLength": 12}, "token": {"type": "string"}}}}, "securitySchemes": {"bearerAuth": '
        '{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}}}}\n'
    )
    texts["README.md"] = (
        "## Configuration\n\nSet `ANTHROPIC_API_KEY` to enable LLM summaries; without it every feature still works.\n"
        "Copy `.env.example` to `.env` and fill in `DB_PASSWORD=<your password>`.\n\n"
        "| Setting | Default |\n|---|---|\n| `token_budget` | 2000 |\n| `secret_scan` | true |\n\n"
        "The access token is refreshed automatically; see docs/architecture/retrieval-and-fusion.md.\n"
    )
    texts["docker ps"] = (
        "CONTAINER ID   IMAGE                         COMMAND                  CREATED       STATUS\n"
        f'{r(HEX, 12)}   postgres:16-alpine            "docker-entrypoint.s…"   2 hours ago   Up 2 hours\n'
        f'{r(HEX, 12)}   ghcr.io/acme/api:v2.14.0-rc1   "/usr/local/bin/api"     2 hours ago   Up 2 hours\n'
        f"$ docker inspect --format '{{{{.Id}}}}' api\nsha256:{r(HEX, 64)}\n"
    )
    texts["ls -la"] = (
        "total 48\ndrwxr-xr-x  9 dev dev 4096 Sep 17 10:00 .\n-rw-r--r--  1 dev dev  231 Sep 17 09:58 .env.example\n"
        "-rw-r--r--  1 dev dev 1042 Sep 17 09:58 pyproject.toml\n"
        "drwxr-xr-x  4 dev dev 4096 Sep 17 09:58 agentmem_mcp\n"
        "-rw-r--r--  1 dev dev  512 Sep 17 09:58 test_consolidation_incremental_summaries_regression.py\n"
    )
    texts["server.log"] = "".join(
        f"2024-09-17T10:0{i}:00.{r(DIGITS, 3)}Z INFO  [worker-{i}] memory_search project=agentmem "
        f"query_id={uuid4()} span={r(HEX, 16)} hits=7 bm25_ms=3.1 vector_ms=12.4 fused_ms=0.2\n"
        for i in range(5)
    )
    texts["diff"] = (
        "diff --git a/agentmem_mcp/retrieval.py b/agentmem_mcp/retrieval.py\n"
        f"index {r(HEX, 7)}..{r(HEX, 7)} 100644\n--- a/agentmem_mcp/retrieval.py\n+++ b/agentmem_mcp/retrieval.py\n"
        "@@ -41,7 +41,7 @@ def fuse_rankings(rankings: dict[str, list[int]], weights: dict[str, float]) -> list[int]:\n"
        "-    k = 60\n+    k = settings.rrf_k\n"
    )
    return texts


ORDINARY_TEXTS: dict[str, str] = _ordinary() | issue_36_ordinary()
