"""What crosses between the grader's judge and the student's kernel: plain data in a safe encoding, never a pickle.

A message is a JSON tree plus binary blobs. Numbers, strings, None and bools are JSON; lists, tuples, dicts (any
hashable keys), sets, frozensets, bytes, complex numbers, slices and ranges are tagged; numpy arrays and scalars are
blobs written by `np.save(allow_pickle=False)` (an object array is refused); an object of a class defined in
`infopt` crosses as its class's name and its attributes, and is rebuilt on the other side from the library's own
class (`cls.__new__` and the attributes: no `__init__`, no `__setstate__`, no method the sender wrote). A class the
student defined, a function, a module or a lock does not cross: it is refused with a message naming where it was.

Identity survives a call: each side numbers the mutable objects (lists, dicts, sets, arrays, library objects) of a
message in the order it meets them, so shared references and cycles come out as they went in. The reply to a call
names the objects of the request it hands back (`{"R": i}`, with their state when it changed in place), so the
caller gets its own objects back, updated in place: a function that returns one of its arguments, or mutates one,
behaves as it would in one process.
"""
from __future__ import annotations

import builtins
import enum
import functools
import hashlib
import importlib
import io
import itertools
import json
import re
import struct
import sys
from typing import Any, Callable

import numpy as np

from .errors import HarnessError, is_harness_error

MAX_DEPTH = 100              # nesting of one message (a graph nests 5 levels; Python's stack allows ~300)
MAX_ITEMS = 2_000_000        # JSON nodes of one message
MAX_FRAME = 256 * 2**20      # bytes of one message on the channel
FORBIDDEN_MODULES = ("infopt.grading",)   # library classes that never cross (the grading machinery itself)


class WireError(TypeError):
    """A value that cannot cross between the judge and the kernel, or a message that is not well formed."""


# ----- encoding ----------------------------------------------------------------------------------------------
class Encoder:
    """Encodes values into (tree, blobs); `known` maps id(obj) -> number for the objects a reply hands back."""

    def __init__(self, known: dict[int, int] | None = None, changed: Any = None) -> None:
        self.blobs: list[bytes] = []
        self.seen: dict[int, int] = {}          # id(obj) -> number in this message
        self.keep: list[Any] = []               # keeps numbered objects alive (ids stay unique)
        self.known = known or {}
        self.changed = changed                  # callable(obj) -> bool: send the state of a known object?
        self.count = 0
        self.numbered = len(self.known)          # the next number this message gives a new mutable object
        self.table: list[Any] = []               # this message's new numbered objects, in number order
        self.storages: dict[tuple, int] = {}     # tensor storages already in this message

    def encode(self, value: Any, where: str = "value", depth: int = 0) -> Any:
        self.count += 1
        if self.count > MAX_ITEMS:
            raise WireError(f"{where}: more than {MAX_ITEMS} items in one value")
        if depth > MAX_DEPTH:
            raise WireError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        if value is None or type(value) in (bool, int, str):
            return value
        if type(value) is float:
            return value if value == value and value not in (float("inf"), float("-inf")) else {"F": repr(value)}
        key = id(value)
        if key in self.known:
            number = self.known[key]
            if key in self.seen:
                return {"R": number}
            self.seen[key] = number
            self.keep.append(value)
            if self.changed is not None and self.changed(value):
                if _codec_of(value):   # rebuilt, never updated (its new form may not even decode): say so
                    return {"R": number, "u": {"CX": True}}
                return {"R": number, "u": self._fresh(value, where, depth, number=None)}
            return {"R": number}
        if key in self.seen:
            return {"R": self.seen[key]}
        return self._fresh(value, where, depth, number=self._number(value))

    def _number(self, value: Any) -> int | None:
        """Mutable values get a number (the order both sides meet them); immutable ones are sent by value."""
        if isinstance(value, (list, dict, set, bytearray, np.ndarray, np.random.Generator)) or _is_tensor(value) or (
                _codec_of(value) is not None) or (
                _library_class(type(value)) and not isinstance(value, enum.Enum)):
            number = self.numbered
            self.numbered += 1
            self.seen[id(value)] = number
            self.keep.append(value)
            self.table.append(value)
            return number
        return None

    def _fresh(self, value: Any, where: str, depth: int, number: int | None) -> Any:
        enc = self.encode
        kind = type(value)
        tag: dict[str, Any] = {} if number is None else {"i": number}
        if kind is list:
            return {"L": [enc(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)], **tag}
        if kind is tuple:
            return {"T": [enc(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]}
        if kind is dict:
            return {"D": [[enc(k, f"{where} key", depth + 1), enc(v, f"{where}[{k!r}]", depth + 1)]
                          for k, v in value.items()], **tag}
        if kind in (set, frozenset):
            items = [enc(v, f"{where} item", depth + 1) for v in value]
            return {"S" if kind is set else "Z": items, **tag}
        if kind in (bytes, bytearray):
            self.blobs.append(bytes(value))
            return {"B": len(self.blobs) - 1, "ba": kind is bytearray, **tag}
        if kind is complex:
            return {"C": [repr(value.real), repr(value.imag)]}
        if kind is slice:
            return {"SL": [enc(value.start, where, depth + 1), enc(value.stop, where, depth + 1),
                           enc(value.step, where, depth + 1)]}
        if kind is range:
            return {"RG": [value.start, value.stop, value.step]}
        if kind is itertools.count:  # a library object's name counter: crosses as where it stands
            numbers = repr(value)[len("count("):-1].split(", ")
            if not all(_is_int(n) for n in numbers):
                raise WireError(f"{where}: only a count of integers crosses")
            return {"CN": [int(n) for n in numbers]}
        if kind is np.ndarray or isinstance(value, np.generic):
            if np.asarray(value).dtype.hasobject:
                raise WireError(f"{where}: a numpy array of Python objects cannot cross (use a numeric dtype)")
            buf = io.BytesIO()
            np.save(buf, np.asarray(value), allow_pickle=False)
            self.blobs.append(buf.getvalue())
            return {"A" if kind is np.ndarray else "N": len(self.blobs) - 1, **tag}
        if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
            dtype = np.dtype(value)
            if dtype.hasobject or dtype.fields is not None:
                raise WireError(f"{where}: only plain numpy dtypes cross")
            return {"DT": dtype.str, "cls": isinstance(value, type)}
        if _is_tensor(value):
            return {**_encode_tensor(self, value, where, depth), **tag}
        if _is_torch(kind, "dtype"):
            return {"TD": str(value).replace("torch.", "")}
        if _is_torch(kind, "device"):
            return {"TV": str(value)}
        codec = _codec_of(value)
        if codec is not None:
            try:
                fields = CODECS[codec][1](value)
            except Exception as err:  # noqa: BLE001 (the codec's own failure: this value cannot cross)
                raise WireError(f"{where}: a {_describe(kind)} could not be encoded ({type(err).__name__}: "
                                f"{str(err)[:200]})") from None
            return {"X": codec, **fields, **tag}
        if kind is np.random.Generator:   # its bit generator's name and state: the draws continue where they were
            bits = value.bit_generator
            return {"RNG": type(bits).__name__, "st": enc(bits.state, where, depth + 1), **tag}
        if isinstance(value, enum.Enum) and _library_class(kind):
            return {"E": _class_name(kind), "v": value.name}
        if _library_class(kind):
            state = _state_of(value, where)
            return {"O": _class_name(kind), "s": [[name, enc(v, f"{where}.{name}", depth + 1)]
                                                  for name, v in state.items()], **tag}
        raise WireError(f"{where}: a {_describe(kind)} cannot cross between your code and the grader; return plain "
                        "data (numbers, strings, lists, tuples, dicts, sets, numpy arrays) or the library's own "
                        "objects")


def _torch() -> Any:
    import torch

    return torch


def _is_torch(kind: type, name: str) -> bool:
    return getattr(kind, "__module__", "") == "torch" and kind.__name__ == name


def _is_tensor(value: Any) -> bool:
    """A torch tensor (or parameter): it crosses as its values, dtype and device, never as a pickle."""
    kind = type(value)
    return "torch" in sys.modules and kind in (sys.modules["torch"].Tensor, sys.modules["torch"].nn.Parameter)


def digest(value: Any) -> bytes | None:
    """A fingerprint of everything `value` holds, as it would cross (None when it cannot cross)."""
    try:
        encoder = Encoder()
        tree = encoder.encode(value)
    except WireError:
        return None
    h = hashlib.sha1(json.dumps(tree, separators=(",", ":")).encode())
    for blob in encoder.blobs:
        h.update(hashlib.sha1(blob).digest())
    return h.digest()


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _encode_tensor(self: "Encoder", value: Any, where: str, depth: int) -> dict:
    """A tensor as its storage (sent once per message, shared by every view of it), offset, sizes and strides: a
    transposed or sliced view reaches the other side as the same view, and writes through it reach its storage."""
    torch = _torch()
    t = value.detach()
    device = str(t.device)
    if t.device.type != "cpu":
        t = t.cpu()
    try:
        storage = t.untyped_storage()
    except (RuntimeError, NotImplementedError) as err:
        raise WireError(f"{where}: a {t.layout} tensor cannot cross ({err})") from None
    name = str(t.dtype).replace("torch.", "")
    key = storage.data_ptr(), storage.nbytes()
    if key in self.storages:
        store: dict = {"SR": self.storages[key]}
    else:
        self.storages[key] = number = len(self.storages)
        base = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))
        if name == "bfloat16":   # numpy has no bfloat16: its bits cross as int16
            base = base.view(torch.int16)
        store = {"SB": self._fresh(base.numpy(), where, depth + 1, number=None), "n": number}
    return {"TT": store, "off": t.storage_offset(), "size": list(t.shape), "stride": list(t.stride()), "dt": name,
            "dev": device}


# Objects of libraries above this one (xDSL operations: infopt.mlir.xdsl_ir) cross through a codec they register:
# tag -> (is_one(value), encode(value) -> dict of JSON fields, decode(dict) -> value). Such an object is rebuilt on
# the other side, never updated in place: one changed by a call is reported as changed.
CODECS: dict[str, tuple[Callable[[Any], bool], Callable[[Any], dict], Callable[[dict], Any]]] = {}


def register_codec(tag: str, is_one: Callable[[Any], bool], encode: Callable[[Any], dict],
                   decode: Callable[[dict], Any]) -> None:
    """Let objects `is_one` accepts cross as `{"X": tag, **encode(obj)}` (decoded by `decode`). `tag` is
    "<module>:<name>", the module that registers it: the other side imports it to decode."""
    CODECS[tag] = (is_one, encode, decode)


def _codec_of(value: Any) -> str | None:
    for tag, (is_one, _encode, _decode) in CODECS.items():
        if is_one(value):
            return tag
    return None


def _describe(kind: type) -> str:
    module = getattr(kind, "__module__", "") or ""
    return f"{kind.__qualname__}" + (f" (defined in {module})" if module not in ("builtins", "__main__") else "")


def _class_name(kind: type) -> str:
    return f"{kind.__module__}:{kind.__qualname__}"


def _library_class(kind: type) -> bool:
    """A class of infopt (not of its grading machinery) that the other side can rebuild from the library."""
    module = getattr(kind, "__module__", "") or ""
    if not (module == "infopt" or module.startswith("infopt.")) or module.startswith(FORBIDDEN_MODULES):
        return False
    try:
        return _resolve_class(_class_name(kind)) is kind
    except WireError:
        return False


def _state_of(value: Any, where: str) -> dict[str, Any]:
    """An object's attributes: its __dict__ and its slots."""
    state: dict[str, Any] = {}
    for klass in type(value).__mro__:
        for name in getattr(klass, "__slots__", ()) if not isinstance(getattr(klass, "__slots__", ()), str) else (
                klass.__slots__,):
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                state[name] = getattr(value, name)
    state.update(getattr(value, "__dict__", {}))
    if not all(type(k) is str for k in state):
        raise WireError(f"{where}: attribute names must be strings")
    return state


NATIVE = re.compile(r"^\s*(import|from)\s+(ctypes|llvmlite|iree\.runtime|subprocess)\b", re.M)


@functools.lru_cache(maxsize=None)
@functools.lru_cache(maxsize=None)
def native_module(module_name: str) -> bool:
    """True for a library module that touches native code (ctypes, llvmlite, IREE's runtime, subprocess): its classes
    may hold addresses or handles, so they never cross (rebuilt from data, one could call an address it was given)."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if module is None or not path:
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            return bool(NATIVE.search(handle.read()))
    except OSError:
        return True


def _resolve_class(name: str) -> type:
    """The library class called `module:qualname`; WireError for anything else."""
    module_name, _, qualname = str(name).partition(":")
    if not (module_name == "infopt" or module_name.startswith("infopt.")) or module_name.startswith(
            FORBIDDEN_MODULES):
        raise WireError(f"{name!r} is not a class of the library")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise WireError(f"{name!r} is not a class of the library ({type(err).__name__})") from None
    if not isinstance(obj, type) or issubclass(obj, BaseException):
        raise WireError(f"{name!r} is not a class of the library")
    if native_module(obj.__module__):
        raise WireError(f"{name!r} belongs to a module that handles native code: its objects do not cross")
    return obj


# ----- decoding ----------------------------------------------------------------------------------------------
class Decoder:
    """Rebuilds values from (tree, blobs); `table` holds this call's numbered objects (shared with the encoder)."""

    def __init__(self, blobs: list[bytes], table: list[Any] | None = None) -> None:
        self.blobs = blobs
        self.table = table if table is not None else []
        self.count = 0
        self.storages: dict[Any, Any] = {}   # tensor storages of this message, by number

    def decode(self, node: Any, depth: int = 0) -> Any:
        self.count += 1
        if self.count > MAX_ITEMS or depth > MAX_DEPTH:
            raise WireError("a message nested too deep or with too many items")
        if node is None or type(node) in (bool, int, str, float):
            return node
        if type(node) is not dict or not node:
            raise WireError(f"malformed message: unexpected {type(node).__name__}")
        dec = lambda v: self.decode(v, depth + 1)  # noqa: E731
        if "R" in node:
            return self._known(node, depth)
        if "F" in node:
            return float(_text(node["F"]))
        if "L" in node:
            out: list = self._register([], node)
            out.extend(dec(v) for v in _items(node["L"]))
            return out
        if "T" in node:
            return tuple(dec(v) for v in _items(node["T"]))
        if "D" in node:
            out_d: dict = self._register({}, node)
            for pair in _items(node["D"]):
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("malformed message: a dict entry is not a pair")
                out_d[_hashable(dec(pair[0]))] = dec(pair[1])
            return out_d
        if "S" in node or "Z" in node:
            slot = self._reserve(node)
            items = {_hashable(dec(v)) for v in _items(node.get("S", node.get("Z")))}
            value = set(items) if "S" in node else frozenset(items)
            return self._fill(slot, value)
        if "B" in node:
            data = self._blob(node["B"])
            return self._register(bytearray(data), node) if node.get("ba") else data
        if "C" in node:
            real, imag = _items(node["C"])
            return complex(float(_text(real)), float(_text(imag)))
        if "SL" in node:
            start, stop, step = _items(node["SL"])
            return slice(dec(start), dec(stop), dec(step))
        if "CN" in node:
            numbers = _items(node["CN"])
            if not 1 <= len(numbers) <= 2 or not all(type(n) is int for n in numbers):
                raise WireError("malformed message: a bad count")
            return itertools.count(*numbers)
        if "RG" in node:
            return range(*[int(v) for v in _items(node["RG"])])
        if "A" in node or "N" in node:
            slot = self._reserve(node)
            try:
                arr = np.load(io.BytesIO(self._blob(node.get("A", node.get("N")))), allow_pickle=False)
            except Exception as err:  # noqa: BLE001 (a malformed blob is the message's fault)
                raise WireError(f"malformed array in the message ({type(err).__name__}: {err})") from None
            return self._fill(slot, arr if "A" in node else arr[()])
        if "TT" in node:
            slot = self._reserve(node)
            tensor = self._tensor(node, depth)
            device = _text(node.get("dev", "cpu"))
            if device != "cpu":
                try:
                    tensor = tensor.to(device)
                except (RuntimeError, AssertionError):  # no such device here: the values are what counts
                    pass
            return self._fill(slot, tensor)
        if "X" in node:
            tag = _text(node["X"])
            if tag not in CODECS and tag.startswith("infopt.") and ":" in tag:
                try:   # the library module that registers it (a codec is named after its module)
                    importlib.import_module(tag.partition(":")[0])
                except ImportError:
                    pass
            codec = CODECS.get(tag)
            if codec is None:
                raise WireError(f"malformed message: no codec {node['X']!r} here (its library is not imported)")
            slot = self._reserve(node)
            try:
                value = codec[2](node)
            except WireError:
                raise
            except Exception as err:  # noqa: BLE001 (a value the codec cannot rebuild: the message's fault)
                raise WireError(f"a {node['X']} could not be rebuilt here ({type(err).__name__}: "
                                f"{str(err)[:300]})") from None
            return self._fill(slot, value)
        if "RNG" in node:
            kind = _text(node["RNG"])
            if kind not in ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"):
                raise WireError(f"malformed message: no bit generator {kind!r}")
            rng = self._register(np.random.Generator(getattr(np.random, kind)()), node)
            try:
                rng.bit_generator.state = self.decode(node.get("st"), depth + 1)
            except (TypeError, ValueError, KeyError) as err:
                raise WireError(f"malformed message: a bad generator state ({err})") from None
            return rng
        if "TD" in node:
            torch = _torch()
            dtype = getattr(torch, _text(node["TD"]), None)
            if not isinstance(dtype, torch.dtype):
                raise WireError("malformed message: not a torch dtype")
            return dtype
        if "TV" in node:
            return _torch().device(_text(node["TV"]))
        if "DT" in node:
            dtype = np.dtype(_text(node["DT"]))
            if dtype.hasobject:
                raise WireError("an object dtype cannot cross")
            return dtype.type if node.get("cls") else dtype
        if "E" in node:
            kind = _resolve_class(_text(node["E"]))
            if not issubclass(kind, enum.Enum):
                raise WireError(f"{node['E']!r} is not an enum")
            return kind[_text(node["v"])]
        if "O" in node:
            kind = _resolve_class(_text(node["O"]))
            obj = self._register(kind.__new__(kind), node)
            _set_state(obj, {_text(k): dec(v) for k, v in _pairs(node["s"])})
            return obj
        raise WireError(f"malformed message: unknown tag {sorted(node)[:3]}")

    def _tensor(self, node: dict, depth: int) -> Any:
        """A tensor node: its storage (decoded once per message) viewed with the node's offset, sizes, strides."""
        torch = _torch()
        name = _text(node.get("dt", ""))
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise WireError(f"malformed message: no torch dtype {name!r}")
        store = node["TT"]
        if type(store) is not dict:
            raise WireError("malformed message: a tensor without a storage")
        if "SR" in store:
            base = self.storages.get(store["SR"])
            if base is None:
                raise WireError("malformed message: a tensor on a storage the message never sent")
        else:
            arr = self.decode(store.get("SB"), depth + 1)
            if type(arr) is not np.ndarray or arr.ndim != 1:
                raise WireError("malformed message: a tensor storage that is not a 1-D array")
            base = torch.from_numpy(arr.copy())
            base = base.view(dtype) if name == "bfloat16" else base.to(dtype)
            self.storages[store.get("n")] = base
        size, stride, offset = node.get("size"), node.get("stride"), node.get("off")
        if not (type(size) is list and type(stride) is list and len(size) == len(stride) and type(offset) is int
                and all(type(v) is int and v >= 0 for v in [*size, *stride, offset])):
            raise WireError("malformed message: a tensor's sizes, strides or offset")
        last = offset + sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else offset - 1
        if last >= base.numel() and all(size):
            raise WireError("malformed message: a tensor view past the end of its storage")
        return torch.as_strided(base, size, stride, offset)

    def _register(self, obj: Any, node: dict) -> Any:
        if "i" in node:
            if node["i"] != len(self.table):
                raise WireError("malformed message: objects numbered out of order")
            self.table.append(obj)
        return obj

    def _reserve(self, node: dict) -> int | None:
        if "i" not in node:
            return None
        self._register(None, node)
        return len(self.table) - 1

    def _fill(self, slot: int | None, value: Any) -> Any:
        if slot is not None:
            self.table[slot] = value
        return value

    def _blob(self, index: Any) -> bytes:
        if type(index) is not int or not 0 <= index < len(self.blobs):
            raise WireError("malformed message: no such blob")
        return self.blobs[index]

    def _known(self, node: dict, depth: int) -> Any:
        number = node["R"]
        if type(number) is not int or not 0 <= number < len(self.table):
            raise WireError("malformed message: a reference to an object this side never sent")
        obj = self.table[number]
        if "u" in node:
            update = node["u"]
            if type(update) is not dict or "i" in update or not update:
                raise WireError("malformed message: a bad update")
            if update == {"CX": True} and _codec_of(obj):
                _update_in_place(obj, obj)   # raises: it changed in place
            fresh = Decoder(self.blobs, table=self.table)
            fresh.count, fresh.storages = self.count, self.storages
            new = fresh.decode(update, depth + 1)
            self.count = fresh.count
            _update_in_place(obj, new)
        return obj


def _typed(value: Any, kind: type, what: str) -> Any:
    """`value` when it is exactly a `kind` (a message's field), else a malformed message."""
    if type(value) is not kind:
        raise WireError(f"malformed message: expected {what}")
    return value


def _items(value: Any) -> list:
    return _typed(value, list, "a list")


def _pairs(value: Any) -> list:
    items = _items(value)
    if not all(type(p) is list and len(p) == 2 for p in items):
        raise WireError("malformed message: expected pairs")
    return items


def _text(value: Any) -> str:
    return _typed(value, str, "a string")


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise WireError(f"malformed message: an unhashable {type(value).__name__} as a key or set item") from None
    return value


def _set_state(obj: Any, state: dict[str, Any]) -> None:
    for name, value in state.items():
        object.__setattr__(obj, name, value)


def _update_in_place(obj: Any, new: Any) -> None:
    """Make `obj` (the caller's own object) hold what the other side's copy of it holds after the call."""
    if type(new) is not type(obj) and not (_is_tensor(obj) and _is_tensor(new)) and not _codec_of(obj):
        raise WireError(f"an argument of type {type(obj).__name__} came back as a {type(new).__name__}")
    if isinstance(obj, list):
        obj[:] = new
    elif isinstance(obj, (dict, set)):
        obj.clear()
        obj.update(new)
    elif isinstance(obj, bytearray):
        obj[:] = new
    elif _codec_of(obj):
        raise WireError(f"the {getattr(obj, 'name', type(obj).__name__)} passed in was changed in place: work on a "
                        "copy, or leave it as it was")
    elif isinstance(obj, np.random.Generator):
        obj.bit_generator.state = new.bit_generator.state
    elif _is_tensor(obj):
        if obj.shape != new.shape or obj.dtype != new.dtype:
            raise WireError(f"a tensor argument changed from {obj.dtype}{list(obj.shape)} to "
                            f"{new.dtype}{list(new.shape)} in place")
        with _torch().no_grad():
            obj.copy_(new.to(obj.device))
    elif isinstance(obj, np.ndarray):
        if obj.shape != new.shape or obj.dtype != new.dtype:
            raise WireError(f"an array argument changed from {obj.dtype}{list(obj.shape)} to "
                            f"{new.dtype}{list(new.shape)} in place")
        if obj.flags.writeable:
            obj[...] = new
    else:
        if hasattr(obj, "__dict__"):
            obj.__dict__.clear()
        _set_state(obj, _state_of(new, "argument"))


# ----- messages on a stream ------------------------------------------------------------------------------------
def dump(tree: Any, blobs: list[bytes]) -> bytes:
    """One message: [8-byte size][4-byte JSON size][JSON][per blob: 8-byte size, bytes]."""
    head = json.dumps(tree, allow_nan=False, separators=(",", ":")).encode()
    parts = [struct.pack("<I", len(head)), head]
    for blob in blobs:
        parts += [struct.pack("<Q", len(blob)), blob]
    body = b"".join(parts)
    if len(body) > MAX_FRAME:
        raise WireError(f"a message of {len(body) / 2**20:.0f} MB is over the channel's cap "
                        f"({MAX_FRAME // 2**20} MB)")
    return struct.pack("<Q", len(body)) + body


def load(body: bytes) -> tuple[Any, list[bytes]]:
    """The inverse of `dump` (without its size prefix)."""
    try:
        (head_len,) = struct.unpack_from("<I", body, 0)
        tree = json.loads(body[4:4 + head_len])
        blobs, at = [], 4 + head_len
        while at < len(body):
            (size,) = struct.unpack_from("<Q", body, at)
            blobs.append(body[at + 8:at + 8 + size])
            if at + 8 + size > len(body):
                raise ValueError("truncated blob")
            at += 8 + size
    except (struct.error, ValueError, RecursionError) as err:
        raise WireError(f"malformed message ({type(err).__name__})") from None
    return tree, blobs


def send(sock: Any, tree: Any, blobs: list[bytes] = ()) -> None:
    sock.sendall(dump(tree, list(blobs)))


def receive(sock: Any) -> tuple[Any, list[bytes]]:
    """The next message; EOFError when the other side closed the channel."""
    (size,) = struct.unpack("<Q", _read(sock, 8))
    if size > MAX_FRAME:
        raise WireError(f"a message of {size / 2**20:.0f} MB is over the channel's cap ({MAX_FRAME // 2**20} MB)")
    return load(_read(sock, size))


def _read(sock: Any, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# ----- exceptions ------------------------------------------------------------------------------------------------
MESSAGE_CAP = 2000


def encode_error(err: BaseException, frames: list | None = None) -> dict:
    """An exception as plain data: its class's name, the names of its bases, a capped message."""
    try:
        text = str(err)
    except Exception:  # noqa: BLE001 (a student's __str__ may raise)
        text = "<the exception's message could not be read>"
    names = []
    for klass in type(err).__mro__:
        names.append(_class_name(klass) if klass.__module__ != "builtins" else klass.__name__)
    return {"type": type(err).__name__[:100], "mro": [str(n)[:200] for n in names[:20]],
            "message": text[:MESSAGE_CAP], "frames": frames or []}


class StudentError(Exception):
    """An exception of a class the judge does not have, raised by the student's code on the other side."""


def decode_error(info: dict) -> BaseException:
    """The judge's own exception for an error that crossed: the first class of its bases the judge knows (a builtin
    exception or one of the library's), with its message; StudentError when none is known."""
    if not isinstance(info, dict):
        return StudentError("malformed error")
    message = str(info.get("message", ""))[:MESSAGE_CAP]
    kind: type = StudentError
    for name in info.get("mro", []) if isinstance(info.get("mro"), list) else []:
        name = str(name)
        found = None
        if ":" not in name:
            candidate = getattr(builtins, name, None)
            if isinstance(candidate, type) and issubclass(candidate, Exception):
                found = candidate
        elif name.startswith("infopt."):
            try:
                module_name, _, qualname = name.partition(":")
                candidate = importlib.import_module(module_name)
                for part in qualname.split("."):
                    candidate = getattr(candidate, part)
                if isinstance(candidate, type) and issubclass(candidate, Exception):
                    found = candidate
            except (ImportError, AttributeError):
                pass
        if found is not None and issubclass(found, HarnessError):
            continue   # the student's code may raise a class of that name; only the judge's own checks are harness
        if found is not None and found is not Exception:
            kind = found
            break
    try:
        err = kind(message)
    except Exception:  # noqa: BLE001 (an exception class whose __init__ wants more arguments)
        err = kind.__new__(kind)
        err.args = (message,)
    if kind is StudentError:
        err.args = (f"{info.get('type', 'Exception')}: {message}",)
    student_type = str(info.get("type", kind.__name__))[:100]
    if is_harness_error(student_type):   # a verdict named so would read as the grader's bug, not the student's
        student_type = f"{student_type} (raised by your code)"
    err.student_type = student_type   # type: ignore[attr-defined]
    err.student_frames = [f for f in info.get("frames", []) if isinstance(f, list)][-12:]  # type: ignore[attr-defined]
    return err
