"""Suffix decoding (Oliaro et al., NeurIPS 2025; Snowflake's Arctic Inference; vLLM's `method: suffix`): no
network. The drafter finds where the last tokens of prompt + output (up to max_tree_depth of them) occurred
before, in this request or in an earlier request's output, and for each match length builds a tree of what
followed those occurrences, each continuation scored by how often it followed (a frequency tree); the longer the
match, the bigger the draft: at most max_spec_factor × the match length nodes (and the spec's node budget), only
continuations whose frequency along their path is at least min_token_prob. It drafts the tree that scores best
(Arctic Inference's rule: the sum of the nodes' path frequencies), K levels deep at most (the pattern and the draft
each up to max_tree_depth: Arctic's depth-limited suffix tree bounds their sum). The frequencies pool this request and
the earlier outputs; Arctic searches them apart and drafts the better-scored of the two (`split`: measured no better
on the shipped workloads: docs/drafters.md, "Suffix decoding (`suffix`)", links the measurement).

Memory: this request's tokens, and a per-process store of earlier requests' outputs, one store per target (token
ids mean nothing across tokenizers) holding at most max_cached_requests requests; the oldest request is evicted
first. A request's output is recorded as it is drafted from, and whole when the run ends (`finish`: finished or
stopped).

Privacy: on a public deployment (`public_source`, which the app sets to specdec/serving/limits.is_public) a request
reads and writes only the entries of its own session: the drafter's `owner`, or, where none was given, the one the
app's `owner_source` names when the request starts (the app: its browser session, specdec/ui/suffix_sessions.py); a
request without an owner there neither reads nor writes the store. SPECDEC_SUFFIX_SHARED_STORE=1 lets the operator
share one store across sessions. Locally (one user: the CLI, an experiment, the app run by its user) every earlier
request is shared.

Exactness: q is the distribution each node's children were drawn from: the frequencies of the continuations
kept under min_token_prob, renormalised. Greedy, a node's children are its most frequent continuations (only the
path the target chooses is kept). Sampling, each expanded node's children are drawn from q without replacement,
as many as decided before drawing, none dropped for its value, so recursive rejection sampling
(verify.verify_tree_sampled) keeps the output the target's own law; chains (propose) draw one child per level.
"""
from __future__ import annotations

import hashlib
import heapq
import itertools
import os
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Optional

from specdec import config
from specdec.drafters.base import CostShape, Drafter, DrafterSpec, LearnedState, Proposal, ProposalContext
from specdec.engine.tree import TreeProposal, TreeShape

import torch

# vLLM's speculative_config keys suffix_decoding_<name>, with vLLM's defaults
MAX_TREE_DEPTH = 24  # the longest match looked for, and the deepest draft
MAX_CACHED_REQUESTS = 10_000  # earlier requests kept per target in this process; the oldest evicted first
MAX_SPEC_FACTOR = 1.0  # a draft holds at most max_spec_factor × the match length tokens
MIN_TOKEN_PROB = 0.1  # a continuation is drafted only where its frequency along its path is at least this
NODES = 24  # the shipped spec's node budget per step (target verification slots)
REPLAY_OWNER = "replay"  # the owner of a replaying drafter's own store (Drafter.replaying): nobody else's
SHARED_STORE = "SPECDEC_SUFFIX_SHARED_STORE"
# the engine reads `nodes` (the verification slots a step may fill); a node has at most 1 / min_token_prob children
SHAPE = TreeShape(top=round(1 / MIN_TOKEN_PROB), beam=1, nodes=NODES)


class TokenIndex:
    """A token sequence and where each token, and each pair of tokens, ends in it."""

    def __init__(self, tokens=()):
        self.tokens: list[int] = []
        self.ends: dict = defaultdict(list)  # token or (token, token) -> positions where it ends
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, tokens) -> None:
        for token in tokens:
            end = len(self.tokens)
            self.tokens.append(int(token))
            self.ends[self.tokens[end]].append(end)
            if end:
                self.ends[(self.tokens[end - 1], self.tokens[end])].append(end)

    def follows(self, seq: list[int]) -> bool:
        """seq begins with every token indexed here."""
        return len(seq) >= len(self.tokens) and seq[: len(self.tokens)] == self.tokens

    def matches(self, pattern: list[int]) -> list[tuple[int, int]]:
        """(match length, end) of every place with a continuation where pattern's last tokens occur: through the
        last two tokens' positions where they occur together, else the last token's."""
        key = (pattern[-2], pattern[-1]) if len(pattern) > 1 and (pattern[-2], pattern[-1]) in self.ends \
            else pattern[-1]
        found = []
        for end in self.ends.get(key, ()):
            if end + 1 < len(self.tokens):
                length = 0
                while length < len(pattern) and end - length >= 0 and \
                        self.tokens[end - length] == pattern[-1 - length]:
                    length += 1
                found.append((length, end))
        return found


@dataclass
class Entry:
    owner: Optional[str]
    output: TokenIndex = field(default_factory=TokenIndex)


class SuffixStore:
    """Earlier requests' outputs for one target: at most `limit` entries, the oldest evicted first."""

    def __init__(self, limit: int):
        self.limit = limit
        self.entries: OrderedDict[int, Entry] = OrderedDict()

    def record(self, request: int, owner: Optional[str], output: list[int]) -> None:
        """The output of `request` so far (a new request becomes the newest entry, evicting the oldest)."""
        entry = self.entries.get(request)
        if entry is None:
            entry = self.entries[request] = Entry(owner)
            while len(self.entries) > self.limit:
                self.entries.popitem(last=False)
        if not entry.output.follows(output):
            entry.output = TokenIndex()
        entry.output.extend(output[len(entry.output):])

    def visible(self, owner: Optional[str], shared: bool, exclude: int) -> list[TokenIndex]:
        """The outputs a request of `owner` may draft from (shared: every entry), its own excluded."""
        return [e.output for r, e in self.entries.items() if r != exclude and (shared or e.owner == owner)]

    def tokens(self) -> int:
        return sum(len(e.output) for e in self.entries.values())


STORES: dict[str, SuffixStore] = {}  # target name -> its store (per process)
REQUESTS = itertools.count()
# the owner of a request started without one (the app sets it: the browser session running the request); None: none
owner_source: Optional[Callable[[], Optional[str]]] = None
# whether requests come from the public (the app sets it: serving.limits.is_public); the CLI's one user: never
public_source: Callable[[], bool] = lambda: False


def store_for(target_name: str, limit: int) -> SuffixStore:
    store = STORES.setdefault(target_name, SuffixStore(limit))
    store.limit = limit
    return store


def store_access(owner: Optional[str], public: bool, env=None) -> tuple[bool, bool]:
    """(may use the store, shared across owners) for a request of `owner` on a deployment that is `public` or not."""
    env = os.environ if env is None else env
    if config.get(SHARED_STORE, env) or not public:
        return True, True
    return owner is not None, False


@dataclass
class Trie:
    """Continuations of the match's occurrences: token -> (how many continued with it, its own continuations)."""

    count: int = 0
    children: dict = field(default_factory=dict)

    def add(self, tokens: list[int]) -> None:
        node = self
        node.count += 1
        for token in tokens:
            node = node.children.setdefault(token, Trie())
            node.count += 1


@dataclass(order=True)
class Node:
    score: float  # minus the product of the frequencies along its path (heap order: likeliest first)
    order: int
    token: int = field(compare=False)
    parent: int = field(compare=False)  # index of the parent node, -1 for the root
    depth: int = field(compare=False)
    trie: Trie = field(compare=False)
    row: int = field(compare=False, default=-1)  # the q row it and its siblings were drawn from
    index: int = field(compare=False, default=-1)  # its place among the tree's nodes (-1: the root, or not yet)


class SuffixDrafter(Drafter):
    name = "suffix"
    family = "suffix decoding"
    learns_across_requests = True
    description = ("drafts a tree of what followed earlier matches of the last tokens, in this request or earlier "
                   "requests' outputs, sized by the match: no network; learns across requests")

    def __init__(self, vocab_limit: int, device, target_name: str, shape: TreeShape = SHAPE,
                 max_tree_depth: int = MAX_TREE_DEPTH, max_cached_requests: int = MAX_CACHED_REQUESTS,
                 max_spec_factor: float = MAX_SPEC_FACTOR, min_token_prob: float = MIN_TOKEN_PROB,
                 owner: Optional[str] = None, store: Optional[SuffixStore] = None):
        super().__init__(vocab_limit)
        self.device, self.tree_shape, self.owner = device, shape, owner
        self.max_tree_depth, self.max_spec_factor, self.min_token_prob = max_tree_depth, max_spec_factor, min_token_prob
        self.target_name = target_name
        self.store = store if store is not None else store_for(target_name, max_cached_requests)
        self.request = TokenIndex()
        self.prompt_length, self.request_id, self.access = 0, next(REQUESTS), (False, False)
        self.request_owner = owner  # this request's: the drafter's owner, else owner_source's when it started
        self.split = False  # True: this request and the store searched apart, the better draft taken (Arctic's)
        self.last_match = 0  # the match length of the last draft (for tests and the notebook)

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        self.request, self.prompt_length, self.request_id = TokenIndex(prompt_ids), len(prompt_ids), next(REQUESTS)
        self.request_owner = self.owner if self.owner is not None or owner_source is None else owner_source()
        self.access = store_access(self.request_owner, public_source())

    def finish(self, seq: list[int]) -> None:
        """The run ended: its whole output goes to the store (where allowed)."""
        self._follow(seq)

    def snapshot(self) -> LearnedState:
        """The earlier outputs a request starting now may draft from (its owner's, or every one where shared)."""
        owner = self.owner if self.owner is not None or owner_source is None else owner_source()
        usable, shared = store_access(owner, public_source())
        outputs = tuple(tuple(index.tokens) for index in self.store.visible(owner, shared, exclude=-1)) if usable \
            else ()
        digest = hashlib.sha256(repr(outputs).encode()).hexdigest()[:16]
        return LearnedState(len(outputs), sum(map(len, outputs)), digest, outputs)

    def replaying(self, state: Optional[LearnedState]) -> "SuffixDrafter":
        """A drafter of its own store holding `state`'s outputs (an empty store for None), owned by nobody else:
        it drafts from them as this drafter would have at the snapshot, and what it records stays in its store."""
        store = SuffixStore(max(1, self.store.limit))
        for request, output in enumerate(state.content if state is not None else ()):
            store.record(-1 - request, REPLAY_OWNER, list(output))
        return SuffixDrafter(self.vocab_limit, self.device, self.target_name, self.tree_shape, self.max_tree_depth,
                             self.store.limit, self.max_spec_factor, self.min_token_prob, owner=REPLAY_OWNER,
                             store=store)

    def propose(self, seq: list[int], k: int, context: ProposalContext) -> Proposal:
        tree = self._draft(seq, k, context, chain=True)
        return Proposal(tree.ids, tree.q_rows(list(range(len(tree.ids)))) if tree.ids else None)

    def propose_tree(self, seq: list[int], depth: int, context: Optional[ProposalContext] = None) -> TreeProposal:
        return self._draft(seq, depth, context, chain=False)

    def _draft(self, seq: list[int], depth: int, context: Optional[ProposalContext], chain: bool) -> TreeProposal:
        """The draft of the match length whose greedy tree scores best (Arctic Inference's rule: the sum of its nodes'
        path frequencies, the expected number of accepted tokens if the frequencies held); sampling then draws the
        chosen length's tree. The choice reads only seq and the store, never a draw."""
        self._follow(seq)
        depth = min(depth, self.max_tree_depth)
        best, self.last_match = None, 0
        for length, trie in self._continuations(seq, depth) if depth > 0 else ():
            budget = min(depth if chain else self.tree_shape.nodes, max(1, int(self.max_spec_factor * length)))
            tree, score = self._grow(trie, depth, budget, None, chain, context)
            if best is None or score > best[0]:
                best, self.last_match = (score, trie, budget, tree), length
        if best is None:
            return TreeProposal([], [], lambda nodes: None)
        _, trie, budget, tree = best
        if context is None or not context.sampling:
            return tree
        return self._grow(trie, depth, budget, context, chain, context)[0]

    def _follow(self, seq: list[int]) -> None:
        """Index seq (this request's prompt + output) and record its output in the store where allowed."""
        if not self.request.follows(seq):
            self.request, self.prompt_length = TokenIndex(), min(self.prompt_length, len(seq))
        self.request.extend(seq[len(self.request):])
        if self.access[0]:
            self.store.record(self.request_id, self.request_owner, seq[self.prompt_length:])

    def _continuations(self, seq: list[int], depth: int) -> list[tuple[int, Trie]]:
        """For each length L of a match of seq's last tokens (longest first): the continuations, up to depth tokens,
        of every occurrence of its last L tokens, in this request and the store's visible outputs (split: in each
        apart, this request's first, as Arctic's local and global trees)."""
        pattern = seq[-self.max_tree_depth:]
        groups = [[self.request]]
        if self.access[0]:
            groups.append(self.store.visible(self.request_owner, self.access[1], self.request_id))
        if not self.split:
            groups = [[source for group in groups for source in group]]
        tries = []
        for sources in groups:
            found = [(length, source, end) for source in sources for length, end in source.matches(pattern)]
            for length in sorted({length for length, _, _ in found}, reverse=True):
                trie = Trie()
                for matched, source, end in found:
                    if matched >= length:
                        trie.add(source.tokens[end + 1 : end + 1 + depth])
                tries.append((length, trie))
        return tries

    def _eligible(self, node: Trie, score: float) -> list[tuple[int, Trie, float]]:
        """(token, its trie, its path frequency) of node's continuations frequent enough, the most frequent first."""
        kids = sorted(node.children.items(), key=lambda item: (-item[1].count, item[0]))
        return [(token, child, score * child.count / node.count) for token, child in kids
                if score * child.count / node.count >= self.min_token_prob]

    def _grow(self, trie: Trie, depth: int, budget: int, sampling: Optional[ProposalContext], chain: bool,
              context: Optional[ProposalContext]) -> tuple[TreeProposal, float]:
        """Greedy: the `budget` likeliest continuations (path frequency), each a node once it is the likeliest
        candidate left. Sampling: the likeliest node not yet expanded gets its children drawn from q without
        replacement, as many as the budget left allows (decided before drawing), every draw kept. chain: one child
        per node. Returns the tree and its score (the sum of its nodes' path frequencies)."""
        nodes: list[Node] = []
        rows: list[tuple[list[int], list[float]]] = []  # per expanded node: its children's tokens and their q
        order = itertools.count()
        frontier = [Node(-1.0, next(order), -1, -1, 0, trie)]  # the root
        while frontier and len(nodes) < budget:
            node = heapq.heappop(frontier)
            if node.token >= 0 and sampling is None:  # greedy: the likeliest candidate left becomes a node
                node.index = len(nodes)
                nodes.append(node)
                if chain and context is not None and context.unsure(self._dense([rows[node.row]])[0]):
                    break
            kids = self._eligible(node.trie, -node.score) if node.depth < depth and len(nodes) < budget else []
            if not kids:
                continue
            rows.append(([t for t, _, _ in kids], _normalised([c.count for _, c, _ in kids])))
            if sampling is not None:
                count = min(1 if chain else len(kids), budget - len(nodes))
                q = torch.tensor(rows[-1][1], dtype=torch.float64)
                kids = [kids[i] for i in torch.multinomial(q, count, replacement=False,
                                                           generator=sampling.generator).tolist()]
            elif chain:
                kids = kids[:1]
            for token, child, score in kids:
                new = Node(-score, next(order), token, node.index, node.depth + 1, child, len(rows) - 1)
                if sampling is not None:  # every draw is kept
                    new.index = len(nodes)
                    nodes.append(new)
                heapq.heappush(frontier, new)
        drawn = [node.row for node in nodes]

        def q_rows(indices: list[int]) -> torch.Tensor:
            return self._dense([rows[drawn[i]] for i in indices])

        return TreeProposal([n.token for n in nodes], [n.parent for n in nodes], q_rows), -sum(n.score for n in nodes)

    def _dense(self, rows: list[tuple[list[int], list[float]]]) -> torch.Tensor:
        """[n, V] q rows from (tokens, probabilities)."""
        dense = torch.zeros(len(rows), self.vocab_limit, device=self.device)
        for i, (tokens, probs) in enumerate(rows):
            dense[i, tokens] = torch.tensor(probs, dtype=dense.dtype, device=self.device)
        return dense

    def state_bytes(self) -> int:
        """This request's index and the store's outputs, at about 8 bytes a token held once (indexes not counted)."""
        return 8 * (len(self.request) + self.store.tokens())

    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        return [DrafterSpec(
            name=cls.name, drafter=cls, description=cls.description, build=_build, title="Suffix decoding",
            summary=f"finds earlier matches (up to {MAX_TREE_DEPTH} tokens) of the last tokens in this request and in "
                    "earlier requests' outputs, and drafts a tree of what followed them there, scored by frequency "
                    f"and sized by the match (up to {NODES} nodes, K levels; no weights)",
            diagram="last tokens ──▶ matches in prompt + output + earlier outputs ──▶ a tree of what followed, "
                    "by frequency (≤ match length nodes) ──▶ one target forward ──▶ the branch the target chooses",
            note="Costs almost nothing; pays where requests repeat structure (successive edits of one file, agents, "
                 "chats quoting earlier turns): it remembers earlier outputs in this process. Not one of auto's "
                 "candidates (no model card: its acceptance depends on the workload's repeats). Public deployments: "
                 "a session drafts from its own earlier outputs only.",
            tree=SHAPE)]

    @classmethod
    def cost_shape(cls, spec: DrafterSpec, meta: dict, hidden: int) -> CostShape:
        """A search through token ids: nothing the model prices."""
        return CostShape(network=False)


def _normalised(counts: list[int]) -> list[float]:
    total = sum(counts)
    return [c / total for c in counts]


def _build(target, load_model) -> SuffixDrafter:
    return SuffixDrafter(target.real_vocab_size, target.device, target.name)
