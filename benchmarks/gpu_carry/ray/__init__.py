"""A stand-in for Ray on a machine its wheel cannot travel to (the lent GPU): verl and TransferQueue import `ray` and
decorate classes with `ray.remote` at import time, but one worker at world size 1 never starts Ray. Decorators leave
what they decorate as it is; any other use raises, so a path that needs Ray fails loudly."""

import importlib.abc
import importlib.machinery
import sys
import types


def _refuse(name):
    def refused(*args, **kwargs):
        raise RuntimeError(f"{name}: Ray is not installed here (stand-in module)")

    return refused


def _actor(obj):
    if isinstance(obj, type):
        obj.__ray_actor_class__ = obj  # where Ray's actor wrapper keeps the class it wraps
    return obj


def remote(*args, **kwargs):
    """@ray.remote and @ray.remote(...): the class or function itself; `.remote()` on it is never reached."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return _actor(args[0])
    return _actor


class _Stub:
    """Any other attribute: usable as a base class, a type hint or a decorator, refused when called."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Stub(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator
        return _refuse(self._name)()

    def __mro_entries__(self, bases):
        return (object,)

    def __getitem__(self, item):
        return self


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self.__name__}.{name}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("ray."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
sys.modules[__name__].__class__ = _Module
sys.modules[__name__].__path__ = __path__
