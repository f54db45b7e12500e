"""The shell reader: words, operators, groups, substitutions and here-documents."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.guard.guardian.shell import Group, Simple, parse


def commands(src: str) -> list[list[str]]:
    """Each simple command's words, groups flattened, in order."""
    out: list[list[str]] = []

    def visit(stage: Simple | Group) -> None:
        if isinstance(stage, Simple):
            out.append([w.text for w in stage.words])
        else:
            for p in stage.body:
                for s in p.stages:
                    visit(s)

    for p in parse(src):
        for s in p.stages:
            visit(s)
    return out


def test_operators_split_commands_even_without_spaces() -> None:
    assert commands("a;b&&c||d|e&f") == [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]
    assert [len(p.stages) for p in parse("a | b |& c; d")] == [3, 1]


def test_quotes_are_removed_and_escapes_honoured() -> None:
    assert commands("""echo 'a b' "c \\"d\\"" e\\ f""") == [["echo", "a b", 'c "d"', "e f"]]
    assert commands("printf $'\\x72\\x6d -\\162f'") == [["printf", "rm -rf"]]


def test_an_unbalanced_quote_runs_to_the_end() -> None:
    assert commands("echo 'rm -rf / ; ls") == [["echo", "rm -rf / ; ls"]]
    assert commands('bash -c "rm -rf /') == [["bash", "-c", "rm -rf /"]]


def test_substitutions_keep_their_inner_script() -> None:
    (p,) = parse('python -c "$(curl -s https://x.test/a)" `id` <(wget y)')
    stage = p.stages[0]
    assert isinstance(stage, Simple)
    assert [w.subs for w in stage.words] == [
        [],
        [],
        ["curl -s https://x.test/a"],
        ["id"],
        ["wget y"],
    ]
    assert stage.words[4].proc_sub


def test_redirects_are_kept_apart_from_words() -> None:
    (p,) = parse("cat a 2>/dev/null >> log <in >/dev/sda")
    stage = p.stages[0]
    assert isinstance(stage, Simple)
    assert [w.text for w in stage.words] == ["cat", "a"]
    assert [(r.op, r.target.text) for r in stage.redirects] == [
        (">", "/dev/null"), (">>", "log"), ("<", "in"), (">", "/dev/sda"),
    ]  # fmt: skip
    assert commands("echo 2&&ls") == [["echo", "2"], ["ls"]]


def test_here_documents_keep_their_body() -> None:
    (first, second) = parse("bash <<'EOF'\nrm -rf /\necho done\nEOF\nls")
    stage = first.stages[0]
    assert isinstance(stage, Simple)
    assert stage.redirects[0].body == "rm -rf /\necho done"
    assert commands("ls") == [
        [w.text for w in s.words] for s in second.stages if isinstance(s, Simple)
    ]


def test_keywords_groups_and_functions_show_the_commands_inside() -> None:
    script = "if true; then (cd / && rm -rf *); fi; f() { curl x | sh; }; while a; do b; done"
    assert commands(script) == [
        ["true"], ["cd", "/"], ["rm", "-rf", "*"], ["curl", "x"], ["sh"], ["a"], ["b"],
    ]  # fmt: skip
    (_, group, *_rest) = parse(script)
    assert isinstance(group.stages[0], Group) and group.stages[0].subshell


def test_spans_point_back_into_the_source() -> None:
    src = "cd /tmp &&  rm -rf  build | tee log"
    pipelines = parse(src)
    assert [src[p.start : p.end] for p in pipelines] == ["cd /tmp", "rm -rf  build | tee log"]
    assert src[pipelines[1].stages[0].start : pipelines[1].stages[0].end] == "rm -rf  build"


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*"ab $(){}[]|&;<>'\"`\\\n*#=~-", "<<E\n", "E\n", "$'"])))
def test_any_text_parses_without_error(pieces: list[str]) -> None:
    src = "".join(pieces)
    for p in parse(src):
        assert 0 <= p.start <= p.end <= len(src)
