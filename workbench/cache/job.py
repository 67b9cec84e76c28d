"""The cache job (child process): recompute the keys the installed Triton would use for a
kernel's check and bench inputs, and on a GPU re-time the configs of its autotune entries.

Parameters: `CacheParams`. Events: "keys"
(the result without its re-timings), then one "verified" per re-timed key, so that the parent
keeps them when it cancels the job midway or it times out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from workbench.bench.timing import quantiles_ms
from workbench.bench.timing_rules import beats
from workbench.cache import keys, live
from workbench.cache.result import CacheReach
from workbench.catalog.spec import KernelSpec
from workbench.run.params import CacheParams
from workbench.runtime import compat

MAX_INPUTS_PER_KEY = 4


def job(spec: KernelSpec, params: CacheParams, ctx: Any) -> dict:
    import triton

    from workbench.ir.capture import compile_mode

    spec = compile_mode(spec, ctx.file)
    gpu = ctx.device == "cuda"
    arch = params.arch or (compat.device_arch() if gpu else 90)
    tuners = {id(compat.base_function(j)): j for j in spec.jit if _is_tuner(j)}
    input_errors: list[str] = []
    compile_dirs: dict[str, str] = {}
    groups: dict[tuple[int, tuple], list[dict]] = {}
    target = compat.gpu_target(arch)
    # One input at a time, its launches read and let go before the next is made: a library's
    # bench inputs held together took 18 GB of host memory (softmax_online's).
    for item in _launches(spec, ctx.device):
        for launch in item.pop("launches"):
            bound = compat.bind_launch(launch.fn, target, launch.args, launch.kwargs)
            compile_dirs.setdefault(live.compile_dir(launch.fn, bound, arch), item["label"])
            tuner = tuners.get(id(launch.fn))
            if tuner is not None:
                named = _named(tuner, launch)
                group = groups.setdefault((id(launch.fn), keys.tuning_key(named, tuner.keys)), [])
                if item["label"] not in [g["label"] for g in group]:
                    fingerprints = {k: _fingerprint(v) for k, v in named.items()}
                    group.append({**item, "named": fingerprints})
        if item.get("error"):
            input_errors.append(item["error"])
    names = {compat.base_function(t).__name__[:150] for t in tuners.values()}
    tuned = [t for t in params.tuned if t["kernel"] in names]
    autotune = [_reach(t, tuners, groups, arch) for t in tuned]
    reach = CacheReach(
        kernel=spec.name,
        triton_version=triton.__version__,
        arch=arch,
        mode=ctx.device,
        functions=[_function(j) for j in spec.jit],
        compile_dirs=sorted(compile_dirs),
        autotune=autotune,
        keys=[
            {"kernel": tuners[fid].base_fn.__name__, "key": list(k), "inputs": _labels(g)}
            for (fid, k), g in groups.items()
        ],
        input_errors=input_errors,
    )
    # sent as they come: a cancel keeps them
    ctx.emit({"event": "keys", "reach": reach.to_dict()})
    if params.verify and gpu:
        for (fid, key), group in groups.items():
            verified = _verify(spec, tuners[fid], key, group, autotune)
            ctx.emit({"event": "verified", "verify": verified})
            reach.verify.append(verified)
    return reach.to_dict()


def _is_tuner(obj: Any) -> bool:
    return isinstance(obj, compat.launcher_classes()["autotune"])


def _function(j: Any) -> dict:
    base = compat.base_function(j)
    info: dict = {"name": base.__name__, "autotuned": _is_tuner(j)}
    if _is_tuner(j):
        info |= {
            "key": list(j.keys),
            "configs": [str(c) for c in j.configs],
            "cache_results": bool(getattr(j, "cache_results", False)),
            "prunes": bool(j.early_config_prune or j.perf_model),
            "pre_hook": any(c.pre_hook for c in j.configs),
        }
    return info


def _launches(spec: KernelSpec, device: str) -> Iterator[dict]:
    """The launches of every check and bench input (dtype x shape x layout), recorded only."""
    from workbench.ir.capture import intercepted
    from workbench.runtime import tensors

    targets = {id(compat.base_function(j)) for j in spec.jit} if spec.jit else None
    seen = set()
    for dtype_name in spec.dtypes or (None,):
        dtype = tensors.torch_dtype(dtype_name) if dtype_name else None
        for set_name in spec.shapes:
            for shape in spec.shape_set(set_name):
                for layout in ("contiguous", "strided") if spec.noncontig else ("contiguous",):
                    label = f"{dtype_name or '-'} {'x'.join(map(str, shape)) or '-'} {layout}"
                    if label in seen:
                        continue
                    seen.add(label)
                    item: dict = {
                        "label": label,
                        "shape": shape,
                        "dtype": dtype_name,
                        "layout": layout,
                        "launches": [],
                    }
                    # Shapes, dtypes and alignment make the keys: meta tensors carry all three
                    # (a view's data_ptr keeps its offset) at no memory; a kernel_fn that reads
                    # values (`.item()`) gets real inputs instead.
                    for where in ("meta", device):
                        item["launches"] = []
                        try:
                            args = spec.make_inputs(shape, dtype, where)
                            if layout == "strided":
                                args = tensors.noncontig_args(args)
                            with intercepted(item["launches"], targets):
                                spec.kernel_fn(*args)
                            item.pop("error", None)
                            break
                        except Exception as exc:  # noqa: BLE001 - one input failing leaves the rest
                            item["error"] = f"{label}: {type(exc).__name__}: {exc}"
                        finally:
                            args = None  # the input goes before the next one is made
                    yield item


def _named(tuner: Any, launch: Any) -> dict:
    named = dict(zip(tuner.arg_names, launch.args))
    named |= {k: v for k, v in launch.kwargs.items() if k in tuner.arg_names}
    return named


def _labels(group: list[dict]) -> list[str]:
    return [g["label"] for g in group]


def _reach(entry: dict, tuners: dict, groups: dict, arch: int) -> dict:
    """Is this autotune file where the installed Triton would look for its tuning key?"""
    out = {k: entry[k] for k in ("path", "dir", "kernel", "key", "size", "timings")}
    for fid, tuner in tuners.items():
        base = compat.base_function(tuner)
        if base.__name__[:150] != entry["kernel"]:
            continue
        tuning = keys.tuning_key_from_file(entry["key"])
        expected = live.autotune_dir(base, arch, tuning, tuner.configs)
        here = entry["dir"].rsplit("/", 1)[-1]
        out |= {"expected_dir": expected, "reachable": expected == here}
        out["inputs"] = _labels(groups.get((fid, tuning), []))
        if out["reachable"]:
            break
    return out


def _verify(spec: KernelSpec, tuner: Any, key: tuple, group: list[dict], reach: list) -> dict:
    """Re-time every config on the key's first input; time the others' inputs too (finding 2)."""
    import torch

    base = compat.base_function(tuner)
    entry = next(
        (
            a
            for a in reach
            if a["reachable"] and a["kernel"] == base.__name__[:150] and tuple(a["key"]) == key
        ),
        None,
    )
    runs = [_runner(spec, g) for g in group[:MAX_INPUTS_PER_KEY]]
    out: dict = {
        "kernel": base.__name__,
        "spec": spec.name,
        "key": list(key),
        "device": torch.cuda.get_device_name(),
        "inputs": _labels(group),
    }
    if entry is None:
        tuner.cache.pop(key, None)
        runs[0]()  # a miss: Triton tunes now (and writes the entry when cache_results is on)
        torch.cuda.synchronize()
        out["status"] = "tuned now"
        served = tuner.cache[key]
    else:
        out["path"] = entry["path"]
        served = next(c for c in tuner.configs if str(c) == _served_str(tuner, entry))
        out["status"] = "served from disk"
    configs = list(tuner.configs)
    times = [_time(tuner, key, c, runs[0]) for c in configs]
    i_served, i_fast = configs.index(served), min(range(len(configs)), key=lambda i: times[i][0])
    out["served"] = {"config": str(served), "ms": times[i_served]}
    out["fastest"] = {"config": str(configs[i_fast]), "ms": times[i_fast]}
    out["stale"] = entry is not None and beats(times[i_fast], times[i_served])
    out["narrow"] = []
    for g, run in zip(group[1:], runs[1:]):
        own = [_time(tuner, key, c, run) for c in configs]
        i_best = min(range(len(configs)), key=lambda i: own[i][0])
        if beats(own[i_best], own[i_served]):
            differs = _differs(group[0]["named"], g["named"], tuner.keys)
            out["narrow"].append(
                {
                    "input": g["label"],
                    "reused": str(served),
                    "reused_ms": own[i_served][0],
                    "best": str(configs[i_best]),
                    "best_ms": own[i_best][0],
                    "differs": differs,
                    "fix": _narrow_fix(base.__name__, tuner.keys, differs),
                }
            )
    tuner.cache[key] = served
    return out


def _served_str(tuner: Any, entry: dict) -> str:
    import triton

    timings = entry["timings"]
    best = min(range(len(timings)), key=lambda i: timings[i]["ms"][0])
    return str(triton.Config(**timings[best]["config"]))


def _runner(spec: KernelSpec, item: dict):
    from workbench.runtime import tensors

    args = spec.make_inputs(
        item["shape"], tensors.torch_dtype(item["dtype"]) if item["dtype"] else None, "cuda"
    )
    if item["layout"] == "strided":
        args = tensors.noncontig_args(args)
    return lambda: spec.kernel_fn(*args)


def _time(tuner: Any, key: tuple, config: Any, run: Callable[[], object]) -> list[float]:
    """[p50, p20, p80] ms of the launcher with `config` served for `key` (inf if it fails)."""
    tuner.cache[key] = config
    try:
        return list(quantiles_ms(run))
    except Exception:  # noqa: BLE001 - out of resources etc.: Triton's autotuner says inf too
        return [float("inf")] * 3


def _differs(a: dict, b: dict, key: list[str]) -> list[str]:
    out = []
    for name in a:
        if name in key or name not in b:
            continue
        va, vb = _fingerprint(a[name]), _fingerprint(b[name])
        if va != vb:
            out.append(f"{name} ({va} vs {vb})")
    return out


def _fingerprint(v: Any) -> Any:
    if hasattr(v, "stride") and hasattr(v, "shape"):
        return f"stride {tuple(v.stride())}"
    return v if isinstance(v, (int, float, bool, str)) or v is None else type(v).__name__


def _narrow_fix(kernel: str, key: list[str], differs: list[str]) -> str:
    ints = [d.split(" ")[0] for d in differs if not d.split("(", 1)[1].startswith("stride")]
    if ints:
        return f"add {', '.join(ints)} to key=: key={key + ints} in {kernel}'s @triton.autotune"
    return (
        f"the inputs differ only in tensor layout: pass the strides (or a layout flag) as "
        f"arguments of {kernel} and add them to key= ({key} + the stride args)"
    )
