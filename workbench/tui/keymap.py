"""One keymap table: the app's bindings, its footer, the `?` help screen and the command palette
all come from `keymap()`. Each key has an id, so a user keymap (`App.set_keymap`) can move it."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from workbench.run.kinds import COMMANDS
from workbench.tui.tabs import TABS

NEEDS_GPU = "needs a CUDA GPU and this machine has none"


@dataclass(frozen=True)
class Key:
    key: str
    action: str
    """A screen action, e.g. "run('check')" or "in_tab('ir', 'stage', 1)"."""
    title: str
    help: str
    tab: str | None = None
    """The tab it acts in; None: anywhere."""
    gpu: bool = False
    show: bool = True
    id: str = ""

    @property
    def display(self) -> str:
        return DISPLAY.get(self.key, self.key)


DISPLAY = {
    "question_mark": "?",
    "slash": "/",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "escape": "esc",
}

GLOBAL_KEYS: tuple[Key, ...] = (  # help first
    Key("question_mark", "help", "help", "every key, what it does and what is greyed here"),
    Key("slash", "filter", "filter", "filter the kernel list by name (esc clears)", show=False),
    Key("o", "options", "options", "choose dtype, shape set, config and arch for the actions"),
    Key("j", "jobs", "jobs", "the job queue: running, queued and finished jobs; cancel one"),
    Key("x", "cancel", "cancel", "cancel the running job"),
    Key("S", "sort", "sort", "sort the kernel list by the next column", show=False),
    Key("r", "reload", "reload", "find the kernels again (keeps the selection)", show=False),
    Key(
        "escape",
        "back",
        "back",
        "close the filter or the IR search, leave a diff, else back to the kernel list",
        show=False,
    ),
    Key("q", "app.quit", "quit", "quit (running jobs are cancelled)", id="quit"),
)


def keymap() -> list[Key]:
    """Every key: `?` first (it lists the rest: the footer never leaves it out), then the tabs'
    own (they win where a key means something in a tab), then each tab's run key and number
    (`1`-`9`: the first nine tabs), then the other global keys."""
    keys: list[Key] = [GLOBAL_KEYS[0]]
    for t in TABS:
        for k in t.keys:
            args = "".join(f", {a!r}" for a in k.args)
            action = f"in_tab({t.id!r}, {k.method!r}{args})"
            key_id = ".".join([t.id, k.method, *map(str, k.args)])  # ir.stage.-1, ir.stage.1
            keys.append(Key(k.key, action, k.title, k.help, t.id, k.gpu, k.show, key_id))
    keys.append(
        Key("slash", "in_tab('ir', 'search')", "search", "search this IR stage", "ir", id="ir.find")
    )
    for n, t in enumerate(TABS, 1):
        if t.action:
            gpu = COMMANDS[t.action].gpu_only
            what = f"{COMMANDS[t.action].title}: the selected kernel, into {t.title}"
            keys.append(Key(t.key, f"run({t.action!r})", t.title, what, gpu=gpu, id=t.action))
        else:
            keys.append(Key(t.key, f"show_tab({t.id!r})", t.title, f"show {t.title}", id=t.id))
        if n > 9:  # a key is one digit: a tenth tab has its letter (and the tab bar) alone
            continue
        keys.append(
            Key(str(n), f"show_tab({t.id!r})", t.title, f"show {t.title}", show=False, id=f"tab{n}")
        )
    keys += GLOBAL_KEYS[1:]
    return [k if k.id else Key(**{**k.__dict__, "id": k.action}) for k in keys]


def bindings() -> list[Binding]:
    return [
        Binding(
            k.key,
            k.action,
            k.title,
            show=k.show,
            key_display=k.display,
            id=k.id,
            tooltip=NEEDS_GPU if k.gpu else k.help,
        )
        for k in keymap()
    ]
