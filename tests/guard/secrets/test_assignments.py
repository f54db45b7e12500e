"""Password and secret assignments in every syntax agents paste, and what is not one."""
# ruff: noqa: E501  (each sample stays on one line, as it would be pasted)

from __future__ import annotations

import pytest

from gateway.guard.detectors.unwrap import find

P = "Xq7!Lm2pR9vT"  # synthetic; "{P}" in the texts below stands for it

ASSIGNED = {
    "java equals": 'if (password.equals("{P}")) {',
    "java equalsIgnoreCase": 'if (pwd.equalsIgnoreCase("{P}"))',
    "cli/config: npmrc _auth": "_auth=ZGVwbG95OlhxNyFMbTJwUjl2VA==",
    "cli/config: maven": "<server><id>x</id><username>u</username><password>{P}</password></server>",
    "cli/config: spring": "spring.datasource.password={P}",
    "cli/config: wp-config": "define( 'DB_PASSWORD', '{P}' );",
    "cli/config: django": "SECRET_KEY = 'django-insecure-8#k2$9vq!m4x@1z7&p0w^r3t6y5u'",
    "cli/config: docker run -e": "docker run -e POSTGRES_PASSWORD={P} postgres",
    "cli/config: requests auth tuple": 'requests.get(url, auth=("admin", "{P}"))',
    "cli/config: HTTPBasicAuth": "HTTPBasicAuth('admin', '{P}')",
    "cli/config: kubectl literal": "kubectl create secret generic db --from-literal=password={P}",
    "cli/config: oc login": "oc login -u admin -p {P} https://api.cluster:6443",
    "cli/config: podman login": "podman login -u admin -p {P} quay.io",
    "cli/config: helm registry": "helm registry login -u admin -p {P} ghcr.io",
    "cli/config: az login": "az login -u me@corp.com -p {P}",
    "cli/config: psql PGPASSWORD": "PGPASSWORD={P} psql -h db -U app",
    "cli/config: redis-cli -a": "redis-cli -h cache -a {P} ping",
    "cli/config: ldap bind": 'ldapsearch -x -D "cn=admin,dc=corp" -w {P} -b dc=corp',
    "cli/config: sshpass": "sshpass -p '{P}' ssh u@h",
    "cli/config: git clone token": "git clone https://oauth2:glpat-Ab3dE5gH7jK9mN1pQ2rS@gitlab.com/x/y.git",
    "cli/config: rails secret": "config.secret_key_base = '{P}{P}'",
    "cli/config: go struct": 'cfg := Config{User: "app", Password: "{P}"}',
    "cli/config: toml section": '[database]\nuser = "app"\npassword = "{P}"\n',
    "cli/config: xml connectionString": '<add name="db" connectionString="Server=db;Database=app;User ID=sa;Password={P};" />',
    "cli/config: jdbc url": "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password={P};",
    "cli/config: env export quoted": "export DB_PASS='{P}'",
    "cli/config: yaml nested": "db:\n  credentials:\n    user: app\n    pass: {P}\n",
    "cli/config: ini [creds]": "[credentials]\nusername=app\npassword={P}\n",
    "cli/config: curl data json": 'curl -d \'{"username":"app","password":"{P}"}\' https://x/login',
    "cli/config: python dict": "DATABASES = {'default': {'USER': 'app', 'PASSWORD': '{P}'}}",
    "cli/config: php array": "$config['db_password'] = '{P}';",
    "cli/config: csharp": 'var conn = new SqlConnection("Data Source=db;Initial Catalog=app;User Id=sa;Password={P}");',
    "cli/config: powershell cred": '$cred = New-Object PSCredential("admin", (ConvertTo-SecureString "{P}" -AsPlainText -Force))',
    "cli/config: ssh sshpass env": "SSHPASS={P} sshpass -e ssh u@h",
    "def default": 'def connect(host, password="{P}"):',
    "def default pwd": 'def connect(host, pwd="{P}"):',
    "kwarg call": 'db.connect(user="app", passwd="{P}")',
    "compare ==": 'if password == "{P}":',
    "compare pwd ==": 'if pwd == "{P}": return True',
    "compare !=": 'if (pass != "{P}") {',
    "walrus": 'if (pw := "{P}"):',
    "#define": '#define PASSWORD "{P}"',
    "#define DB_PASS": '#define DB_PASS "{P}"',
    "%define": "%define db_password {P}",
    "SQL SET PASSWORD": "SET PASSWORD FOR 'app'@'%' = PASSWORD('{P}');",
    "SQL IDENTIFIED BY": "CREATE USER 'app'@'%' IDENTIFIED BY '{P}';",
    "SQL ALTER ROLE": "ALTER ROLE app WITH PASSWORD '{P}';",
    "XML add key": '<add key="Password" value="{P}" />',
    "XML add key DbPassword": '<add key="DbPassword" value="{P}"/>',
    "XML attr": '<connection user="app" password="{P}" />',
    "XML element": "<password>{P}</password>",
    "yaml": "password: {P}",
    "yaml pswd": "pswd: {P}",
    "ini": "paswd = {P}",
    "toml": 'db_pass = "{P}"',
    "env": "DB_PASSWORD={P}",
    "env passw": "PASSW={P}",
    "compose list": "    environment:\n      - POSTGRES_PASSWORD={P}\n",
    "compose list pass": "    environment:\n      - DB_PASS={P}\n",
    "conn string": "Server=db;Database=app;User Id=app;Password={P};",
    "conn string pwd": "Server=db;Database=app;Uid=app;Pwd={P};",
    "postgres url": "postgres://app:{P}@db:5432/app",
    "secret": 'secret = "{P}"',
    "secret yaml": "secret: {P}",
    "php array": "'password' => '{P}',",
    "js obj": "{ password: '{P}' }",
    "go": 'password := "{P}"',
    "java": 'String password = "{P}";',
    "java setter": 'ds.setPassword("{P}");',
    "shell --password": "mysql --password={P}",
    "sshpass": "sshpass -p {P} ssh host",
    "prose": "the password is {P}",
    "json": '{"password": "{P}"}',
    "ruby hash": ':password => "{P}"',
    "kotlin val": 'val dbPassword = "{P}"',
    "rust let": 'let password = "{P}";',
    "passwd colon space": 'passwd: "{P}"',
    "PASS env": "export PASS={P}",
    "powershell": '$password = ConvertTo-SecureString "{P}" -AsPlainText -Force',
    "netrc": "machine api.example.com login app password {P}",
}

NOT_ASSIGNED = {
    "java equals variable": "if (password.equals(confirmation)) {",
    "java equals empty": 'if (password.equals("")) return;',
    "benign: ansible vault": "$ANSIBLE_VAULT;1.1;AES256\n66386439653236336462626566653063336164663966303231363934653561363964363833313662\n6431626536303530376336343832656537303632313433360a626438346336353331386135323734\n",
    "benign: htpasswd": "admin:$apr1$9Lb8zTcq$gH6qU7c9Q2mRkJ8h0vK1e/",
    "benign: shadow": "root:$6$xyz$abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ./abcdefghijklmnopqrstu:19000:0:99999:7:::",
    "benign: ssh pub": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
    "benign: git log": "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: A <a@b.c>\nDate:   Mon Jan 1\n\n    fix password reset flow\n",
    "benign: sha256sum": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  file.tar.gz",
    "benign: uuid list": "ids: 123e4567-e89b-12d3-a456-426614174000, 987f6543-e21b-43d2-b456-426614174999",
    "benign: password policy": "Passwords must be at least 12 characters and contain a digit.",
    "benign: password reset url": "https://example.com/reset-password?user=42",
    "benign: getpass": "password = getpass.getpass('Password: ')",
    "benign: argparse": "parser.add_argument('--password', help='database password')",
    "benign: pydantic": "password: SecretStr = Field(default=SecretStr(''))",
    "benign: ts type": "interface Login { username: string; password: string }",
    "benign: k8s secretKeyRef": "env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password\n",
    "benign: vault ref": "password: vault:secret/data/db#password",
    "benign: aws arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",
    "benign: lockfile": '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR9ZZnbCGcjB5Fjsw=="',
    "benign: jwt docs": "A JWT looks like xxxxx.yyyyy.zzzzz",
    "benign: npm auth ref": "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "benign: docker pull digest": "image: nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    "benign: go.sum": "golang.org/x/crypto v0.1.0 h1:MDRAIl0xIo9Io2xV565hzXHw3zVseKrJKodhohM5CjU=",
    "benign: mysql no pw": "mysql -u root -p -h db appdb",
    "benign: docker login stdin": "echo $PW | docker login -u me --password-stdin",
    "changeme": 'password = "changeme"',
    "placeholder <>": 'password = "<password>"',
    "env ref": 'password = "${DB_PASSWORD}"',
    "xxx": "password: xxxxxxxx",
    "stars": 'password: "********"',
    "call": "password = get_password()",
    "environ": 'pwd = os.environ["DB_PWD"]',
    "getenv": 'password = os.getenv("PASSWORD")',
    "compare var": "if password == confirm_password:",
    "compare empty": 'if password == "":',
    "def default None": "def connect(host, password=None):",
    "type hint": "password: str = Field(..., min_length=8)",
    "xml placeholder": '<add key="Password" value="" />',
    "xml ref": '<add key="Password" value="%DB_PASSWORD%" />',
    "sql placeholder": "CREATE USER 'app'@'%' IDENTIFIED BY 'password';",
    "sql param": "ALTER USER app IDENTIFIED BY :new_password;",
    "define ref": "#define PASSWORD_LEN 16",
    "pwd shell": "pwd\ncd /tmp",
    "pass keyword python": "except ValueError:\n    pass",
    "pass prose": "the tests pass = good",
    "compose ref": "    environment:\n      - POSTGRES_PASSWORD=${POSTGRES_PASSWORD}\n",
    "compose file": "    environment:\n      - POSTGRES_PASSWORD_FILE=/run/secrets/db_password\n",
    "conn template": "Server=db;Password={0};",
    "docs": "Set `password` to your database password.",
    "password field name": '"password_hash": "$2b$12$abcdefghijklmnopqrstuv"',
    "hash": 'password_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
    "label": 'label="Password" placeholder="Enter password"',
    "html input": '<input type="password" name="password" id="password">',
}


def _found(text: str) -> list[str]:
    # Through the floor's own path: the text and whatever it unwraps to.
    from gateway.guard.detectors.secrets import scan

    return [kind for kind, _ in find(text, scan)]


@pytest.mark.parametrize("name", sorted(ASSIGNED))
def test_assignment_is_found(name: str) -> None:
    assert _found(ASSIGNED[name].replace("{P}", P)), name


@pytest.mark.parametrize("name", sorted(NOT_ASSIGNED))
def test_not_an_assignment(name: str) -> None:
    assert _found(NOT_ASSIGNED[name]) == [], name
