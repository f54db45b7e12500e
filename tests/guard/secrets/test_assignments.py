"""Password and secret assignments in every syntax agents paste, and what is not one."""

from __future__ import annotations

import pytest

from gateway.guard.detectors.unwrap import find

P = "Xq7!Lm2pR9vT"  # synthetic; "{P}" in the texts below stands for it

ASSIGNED = {
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
