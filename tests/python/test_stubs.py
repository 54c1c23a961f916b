"""The type stubs (faiss_ext/python/faiss_ext.pyi, shipped in the wheel) name what the
module defines: the same public names, the same members of each class, and the same
parameter names of each function and method."""

import ast
import inspect
import pathlib
import re
import subprocess
import sys

import faiss_ext

STUBS = pathlib.Path(__file__).resolve().parents[2] / "faiss_ext" / "python" / "faiss_ext.pyi"
# Aliases the stubs define for their own annotations.
STUB_ALIASES = {"ArrayLike", "Results", "SerializedBytes"}


def stub_tree():
    return ast.parse(STUBS.read_text())


def stub_names(body):
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            names[node.targets[0].id] = node
    return names


def module_names(obj):
    own = vars(obj) if inspect.isclass(obj) else {n: getattr(obj, n) for n in dir(obj)}
    # pybind11's own hooks (_pybind11_conduit_v1_ in recent versions) are not the API.
    return {n for n in own
            if (not (n.startswith("__") and n.endswith("__")) or n == "__init__")
            and not n.startswith("_pybind11")}


def pybind_params(func):
    """Parameter names from the pybind11 signature line of a docstring."""
    first = (func.__doc__ or "").splitlines()[0]
    inside = first[first.index("(") + 1: first.rindex(")")]
    params = [p.split(":")[0].strip() for p in re.split(r",\s*(?![^\[]*\])", inside) if p]
    return [p for p in params if p not in ("self", "*")]


def stub_params(node):
    a = node.args
    return [p.arg for p in a.args + a.kwonlyargs if p.arg != "self"]


def test_stubs_name_every_public_name_of_the_module():
    stubs = set(stub_names(stub_tree().body)) - STUB_ALIASES
    module = {n for n in module_names(faiss_ext) if n not in ("__init__",)}
    assert stubs == module


def test_stub_classes_have_the_module_classes_members_and_parameters():
    for name, node in stub_names(stub_tree().body).items():
        obj = getattr(faiss_ext, name, None)
        if not inspect.isclass(obj) or obj is faiss_ext.FaissException:
            if callable(obj) and isinstance(node, ast.FunctionDef):
                assert stub_params(node) == pybind_params(obj), name
            continue
        members = stub_names(node.body)
        # pybind11 gives every class an __init__ (one that raises where none is bound).
        assert set(members) - {"__init__"} == module_names(obj) - {"__init__"}, name
        for member, mnode in members.items():
            if isinstance(mnode, ast.FunctionDef) and not mnode.decorator_list:
                assert stub_params(mnode) == pybind_params(getattr(obj, member)), f"{name}.{member}"


def test_importing_the_module_imports_no_array_framework():
    code = "import sys, faiss_ext; print(sorted({'cupy', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
