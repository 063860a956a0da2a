# SPDX-License-Identifier: MIT
"""How many 32-bit draws a torch CPU generator has made since it was seeded:
the registration's pre_draws, read from the generator's state rather than
asked of the user.

torch's CPU generator is MT19937. Its state (get_state(), the same 5056-byte
layout in torch 1.13 and 2.x) begins: the seed (u64), `left` (i32),
`seeded` (i32), `next` (u64), then the 624 words (each stored as a u64).
Seeded, next is 0; the first draw twists the words and reads word 0, so
after k >= 1 draws next is (k - 1) % 624 + 1 and the words have been
twisted (k - 1) // 624 + 1 times. `next` gives k modulo 624; the number of
twists is found by twisting a freshly seeded generator, 624 draws at a
time, until its words equal the job's."""
import struct

from ._errors import ClairfsError

STATE_BYTES = 5056
WORDS = 624
# left, seeded, next and the words: what a position in the stream is (the
# seed before it is equal anyway; cached normal samples after it are not
# draws the sampler sees).
POSITION = slice(8, 24 + WORDS * 8)
# Where counting stops: a model initialised with 2^28 parameters drawn from
# this generator takes seconds to count; past that, the user says it.
MAX_DRAWS = 1 << 28


def _position(torch, state):
    if state.numel() != STATE_BYTES:
        raise ClairfsError(f"torch {torch.__version__}'s generator state has {state.numel()} "
                           f"bytes, not the {STATE_BYTES} of torch 1.13 to 2.x: give pre_draws= "
                           "yourself")
    return state[POSITION]


def draws_since_seed(torch, generator=None):
    """(seed, draws) of `generator` (None: the global one). Raises
    ClairfsError past MAX_DRAWS."""
    state = (generator.get_state() if generator is not None else torch.get_rng_state()).clone()
    target = _position(torch, state)
    seed, _left, _seeded, nxt = struct.unpack_from("<QiiQ", bytes(state[:24].tolist()))
    fresh = torch.Generator()
    fresh.manual_seed(seed)
    if nxt == 0:
        if torch.equal(_position(torch, fresh.get_state()), target):
            return seed, 0
        raise ClairfsError("the generator's state is not one its seed reaches (was it set "
                           "with set_rng_state?): give pre_draws= yourself")
    if nxt > WORDS:
        raise ClairfsError(f"the generator's state has next = {nxt}: not an MT19937 position")
    # One 32-bit draw per float32 element (tests/order/torch_orders.py's
    # self_check holds torch to it).
    torch.empty(nxt).uniform_(generator=fresh)
    draws = nxt
    block = torch.empty(WORDS)
    while not torch.equal(_position(torch, fresh.get_state()), target):
        if draws > MAX_DRAWS:
            raise ClairfsError(f"the generator has made more than {MAX_DRAWS} draws since it was "
                               "seeded: register before building the model, or give pre_draws= "
                               "yourself")
        block.uniform_(generator=fresh)
        draws += WORDS
    return seed, draws
