"""Which operators draw from a random generator: the one list the capture and the trace comparison
share. torch tags each such operator itself (torch.Tag.nondeterministic_seeded: the dropouts, the
samplers, rand*, randperm, multinomial, and on torch 2.x the attention and RNN ops that take a
dropout); the trace writes a "gen" field on every record of one, and reprun's comparison reads that
field instead of keeping a list of its own. The names below serve only a torch without tags."""

# The base of the op name ("aten.bernoulli_.float" -> "bernoulli_") for a torch without op tags.
FALLBACK = frozenset({
    "bernoulli", "bernoulli_", "normal", "normal_", "normal_functional", "uniform", "uniform_", "random", "random_",
    "randint", "randint_like", "rand", "rand_like", "randn", "randn_like", "randperm", "multinomial", "exponential",
    "exponential_", "geometric", "geometric_", "cauchy", "cauchy_", "log_normal", "log_normal_", "native_dropout",
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "_fused_dropout", "rrelu", "rrelu_", "rrelu_with_noise",
    "rrelu_with_noise_", "poisson", "_standard_gamma", "_sample_dirichlet", "binomial"})

_known = {}


def _tag():
    try:
        import torch
        return torch.Tag.nondeterministic_seeded
    except (ImportError, AttributeError):
        return None


def is_seeded(func):
    """Whether the dispatched operator `func` (an OpOverload) draws from a generator."""
    try:
        return _known[func]
    except (KeyError, TypeError):
        pass
    tag = _tag()
    tags = getattr(func, "tags", None)
    if tag is not None and tags is not None:
        seeded = tag in tags
    else:
        parts = str(func).split(".")
        seeded = len(parts) >= 2 and parts[1] in FALLBACK
    try:
        _known[func] = seeded
    except TypeError:
        pass
    return seeded


def generator_of(torch, leaves, tensors, kwargs):
    """The generator a seeded op draws from, and whether the program passed it (generator=):
    (generator, own), or (None, False) for a device whose default generator torch does not expose."""
    gen = kwargs.get("generator")
    if not isinstance(gen, torch.Generator):
        gen = next((x for x in leaves if isinstance(x, torch.Generator)), None)
    if gen is not None:
        return gen, True
    device = tensors[0].device if tensors else kwargs.get("device")
    device = torch.device(device) if device is not None else torch.device("cpu")
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return torch.cuda.default_generators[index], False
    if device.type == "cpu":
        return torch.default_generator, False
    return None, False


def fingerprint(gen):
    """{"seed": initial_seed(), "state": a digest of the state}: what tells a seed that differs from
    draws that differ in number from a kernel that differs."""
    import hashlib
    state = gen.get_state()
    return {"seed": int(gen.initial_seed()), "state": hashlib.sha256(bytes(state.cpu().numpy())).hexdigest()[:16]}


def is_sampler(func):
    """A seeded op that always draws (a sampler, a dropout): not one tagged for an optional dropout."""
    parts = str(func).split(".")
    return len(parts) >= 2 and parts[1] in FALLBACK


def draws(torch, func, leaves, tensors, kwargs, call):
    """Runs call() (the op) and says whether it drew: a sampler always does; an op torch tags as
    seeded only for its dropout (attention, RNNs) does when its generator's state moved."""
    if not is_seeded(func):
        return call(), False
    if is_sampler(func):
        return call(), True
    try:
        gen, _ = generator_of(torch, leaves, tensors, kwargs)
        before = fingerprint(gen)["state"] if gen is not None else None
    except Exception:
        return call(), True
    out = call()
    try:
        moved = gen is None or fingerprint(gen)["state"] != before
    except Exception:
        moved = True
    return out, moved
