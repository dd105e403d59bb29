"""Paged key/value cache bookkeeping: the block allocator and the prefix tree.

The device tensors live in the engine; this module only decides which block
holds what. Block 0 is reserved as the scratch block (padding writes land
there), so usable blocks are 1..num_blocks-1.

Prefix cache (RadixAttention's role): a radix tree whose edges are full
blocks of tokens. A node owns the block holding the keys and values of its
block of tokens, given the tokens on the path from the root. Blocks carry
reference counts (one per sequence using them); a cached block whose count
drops to zero stays in the tree, evictable, and is only reclaimed (least
recently used leaf first) when the free list is empty.
"""
import itertools


class OutOfBlocks(RuntimeError):
    pass


class _Node:
    __slots__ = ("key", "block", "parent", "children", "last_used")

    def __init__(self, key, block, parent):
        self.key = key
        self.block = block
        self.parent = parent
        self.children = {}
        self.last_used = 0


class BlockManager:
    def __init__(self, num_blocks, block_size, prefix_cache=True):
        if num_blocks < 2:
            raise ValueError("torch_tpu.serve: num_blocks must be at least 2 (block 0 is scratch)")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_cache = prefix_cache
        self.free = list(range(num_blocks - 1, 0, -1))  # pop() hands out low ids first
        self.ref = [0] * num_blocks
        self.node_of = {}          # block -> _Node for cached blocks
        self.root = _Node(None, None, None)
        self.clock = itertools.count(1)
        # hit accounting, in prompt tokens
        self.lookup_tokens = 0
        self.hit_tokens = 0
        self.evictions = 0

    # ---- counts ------------------------------------------------------------
    @property
    def capacity(self):
        return self.num_blocks - 1

    def num_used(self):
        """Blocks referenced by at least one sequence."""
        return sum(1 for r in self.ref[1:] if r > 0)

    def num_cached(self):
        return len(self.node_of)

    def num_available(self):
        """Blocks a new allocation could get: free plus evictable cached."""
        evictable = sum(1 for b in self.node_of if self.ref[b] == 0)
        return len(self.free) + evictable

    def hit_rate(self):
        return self.hit_tokens / self.lookup_tokens if self.lookup_tokens else 0.0

    # ---- allocation ----------------------------------------------------------
    def allocate(self):
        if not self.free:
            self._evict_one()
        b = self.free.pop()
        self.ref[b] = 1
        return b

    def _evict_one(self):
        best = None
        for b, node in self.node_of.items():
            if self.ref[b] == 0 and not node.children:
                if best is None or node.last_used < best.last_used:
                    best = node
        if best is None:
            raise OutOfBlocks("no free or evictable KV block")
        del best.parent.children[best.key]
        del self.node_of[best.block]
        self.free.append(best.block)
        self.evictions += 1

    def release(self, blocks):
        for b in blocks:
            if self.ref[b] <= 0:
                raise RuntimeError(f"torch_tpu.serve: block {b} released more often than held")
            self.ref[b] -= 1
            if self.ref[b] == 0 and b not in self.node_of:
                self.free.append(b)

    # ---- prefix tree -----------------------------------------------------------
    def match(self, tokens, max_blocks):
        """Longest cached prefix of `tokens` in full blocks, at most `max_blocks`:
        returns the blocks (each now referenced once more by the caller)."""
        bs = self.block_size
        out = []
        if self.prefix_cache:
            node = self.root
            now = next(self.clock)
            for i in range(min(len(tokens) // bs, max_blocks)):
                child = node.children.get(tuple(tokens[i * bs:(i + 1) * bs]))
                if child is None:
                    break
                child.last_used = now
                out.append(child.block)
                node = child
        for b in out:
            self.ref[b] += 1
        return out

    def count_lookup(self, prompt_tokens, hit_tokens):
        self.lookup_tokens += prompt_tokens
        self.hit_tokens += hit_tokens

    def peek(self, tokens):
        """Number of leading full blocks of `tokens` in the tree (no side effects)."""
        bs = self.block_size
        node, n = self.root, 0
        for i in range(len(tokens) // bs):
            node = node.children.get(tuple(tokens[i * bs:(i + 1) * bs]))
            if node is None:
                break
            n += 1
        return n

    def insert(self, tokens, blocks):
        """Record the full blocks of a sequence (`blocks[i]` holds tokens
        `[i*bs, (i+1)*bs)`, their keys and values computed). A block whose
        prefix is already cached under another block stays private."""
        if not self.prefix_cache:
            return
        bs = self.block_size
        node = self.root
        now = next(self.clock)
        for i in range(len(tokens) // bs):
            key = tuple(tokens[i * bs:(i + 1) * bs])
            child = node.children.get(key)
            if child is None:
                if blocks[i] in self.node_of:
                    return
                child = _Node(key, blocks[i], node)
                node.children[key] = child
                self.node_of[blocks[i]] = child
            child.last_used = now
            node = child
