"""Reference solutions of the hand-written coding tasks: real programs.

``generate.py`` beside this file runs them to compute the expected outputs of the hidden tests (each
one must also reproduce its task's worked examples) and stores each in ``tasks.json`` as the task's
reference, which the reference play submits (``Environment.solve``) and the judge must give 1.0.
"""

from __future__ import annotations

SOLUTIONS: dict[str, str] = {
    "coding-001": """
import sys
data = sys.stdin.read().split()
n = int(data[0])
print(sum(int(x) for x in data[1:1 + n]))
""",
    "coding-002": """
import sys
for line in sys.stdin.read().splitlines():
    print(" ".join(reversed(line.split())))
""",
    "coding-003": """
n = int(input())
for i in range(1, n + 1):
    if i % 15 == 0:
        print("FizzBuzz")
    elif i % 3 == 0:
        print("Fizz")
    elif i % 5 == 0:
        print("Buzz")
    else:
        print(i)
""",
    "coding-004": """
import sys
lines = sys.stdin.read().split("\\n")
q = int(lines[0])
for line in lines[1:1 + q]:
    kept = [c.lower() for c in line if c.isalnum()]
    print("YES" if kept == kept[::-1] else "NO")
""",
    "coding-005": """
import sys
pairs = {")": "(", "]": "[", "}": "{"}
lines = sys.stdin.read().split("\\n")
q = int(lines[0])
for line in lines[1:1 + q]:
    stack = []
    ok = True
    for c in line:
        if c in "([{":
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                ok = False
                break
    print("YES" if ok and not stack else "NO")
""",
    "coding-006": """
n = int(input())
if n < 2:
    print(0)
else:
    sieve = bytearray([1]) * (n + 1)
    sieve[0] = sieve[1] = 0
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, n + 1, i)))
    print(sum(sieve))
""",
    "coding-007": """
import sys
from math import gcd
data = sys.stdin.read().split()
n = int(data[0])
values = [int(x) for x in data[1:1 + n]]
g = 0
l = 1
for v in values:
    g = gcd(g, v)
    l = l * v // gcd(l, v)
print(g, l)
""",
    "coding-008": """
import sys
value = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
for line in sys.stdin.read().split():
    total = 0
    for i, c in enumerate(line):
        v = value[c]
        if i + 1 < len(line) and value[line[i + 1]] > v:
            total -= v
        else:
            total += v
    print(total)
""",
    "coding-009": """
import sys
table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
         (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
for token in sys.stdin.read().split():
    n = int(token)
    out = []
    for v, s in table:
        while n >= v:
            out.append(s)
            n -= v
    print("".join(out))
""",
    "coding-010": """
import sys
lines = sys.stdin.read().split("\\n")
q = int(lines[0])
for line in lines[1:1 + q]:
    out = []
    i = 0
    while i < len(line):
        j = i
        while j < len(line) and line[j] == line[i]:
            j += 1
        out.append(line[i] + str(j - i))
        i = j
    print("".join(out))
""",
    "coding-011": """
import sys
data = sys.stdin.read().split()
r, c = int(data[0]), int(data[1])
grid = [data[2 + i * c : 2 + (i + 1) * c] for i in range(r)]
for j in range(c):
    print(" ".join(grid[i][j] for i in range(r)))
""",
    "coding-012": """
import sys
data = sys.stdin.read().split()
n = int(data[0])
values = sorted(set(int(x) for x in data[1:1 + n]), reverse=True)
print(values[1] if len(values) >= 2 else "NONE")
""",
    "coding-013": """
import re
import sys
from collections import Counter
lines = sys.stdin.read().split("\\n", 1)
k = int(lines[0])
text = lines[1] if len(lines) > 1 else ""
counts = Counter(re.findall(r"[a-z]+", text.lower()))
for word, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]:
    print(word, count)
""",
    "coding-014": """
import sys
data = sys.stdin.read().split()
n = int(data[0])
intervals = sorted((int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n))
merged = []
for a, b in intervals:
    if merged and a <= merged[-1][1]:
        merged[-1][1] = max(merged[-1][1], b)
    else:
        merged.append([a, b])
for a, b in merged:
    print(a, b)
""",
    "coding-015": """
import sys
from bisect import bisect_left
data = sys.stdin.read().split()
n = int(data[0])
tails = []
for x in map(int, data[1:1 + n]):
    i = bisect_left(tails, x)
    if i == len(tails):
        tails.append(x)
    else:
        tails[i] = x
print(len(tails))
""",
    "coding-016": """
import sys
from collections import deque
lines = sys.stdin.read().split("\\n")
r, c = map(int, lines[0].split())
grid = lines[1:1 + r]
start = end = None
for i, row in enumerate(grid):
    for j, ch in enumerate(row):
        if ch == "S":
            start = (i, j)
        elif ch == "E":
            end = (i, j)
dist = {start: 0}
queue = deque([start])
while queue:
    i, j = queue.popleft()
    if (i, j) == end:
        break
    for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        a, b = i + di, j + dj
        if 0 <= a < r and 0 <= b < c and grid[a][b] != "#" and (a, b) not in dist:
            dist[(a, b)] = dist[(i, j)] + 1
            queue.append((a, b))
print(dist.get(end, -1))
""",
    "coding-017": """
import sys
MOD = 10 ** 9 + 7
def fib(n):
    # fast doubling: returns (F(n), F(n+1))
    if n == 0:
        return 0, 1
    a, b = fib(n // 2)
    c = a * (2 * b - a) % MOD
    d = (a * a + b * b) % MOD
    return (d, (c + d) % MOD) if n % 2 else (c, d)
for token in sys.stdin.read().split():
    print(fib(int(token))[0])
""",
    "coding-018": """
import sys
DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
lines = sys.stdin.read().split("\\n")
for line in lines:
    if not line.strip():
        continue
    x, a, b = line.split()
    n = int(x, int(a))
    b = int(b)
    out = ""
    while n:
        n, d = divmod(n, b)
        out = DIGITS[d] + out
    print(out or "0")
""",
    "coding-019": """
import sys
data = sys.stdin.read().split()
n, cap = int(data[0]), int(data[1])
best = [0] * (cap + 1)
for i in range(n):
    w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
    for room in range(cap, w - 1, -1):
        if best[room - w] + v > best[room]:
            best[room] = best[room - w] + v
print(best[cap])
""",
    "coding-020": """
import heapq
import sys
data = sys.stdin.read().split()
n, m = int(data[0]), int(data[1])
after = [[] for _ in range(n + 1)]
indegree = [0] * (n + 1)
for i in range(m):
    u, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
    after[u].append(v)
    indegree[v] += 1
ready = [v for v in range(1, n + 1) if indegree[v] == 0]
heapq.heapify(ready)
order = []
while ready:
    u = heapq.heappop(ready)
    order.append(u)
    for v in after[u]:
        indegree[v] -= 1
        if indegree[v] == 0:
            heapq.heappush(ready, v)
print(" ".join(map(str, order)) if len(order) == n else "IMPOSSIBLE")
""",
    "coding-021": """
import sys
lines = sys.stdin.read().split("\\n")
a = lines[0] if lines else ""
b = lines[1] if len(lines) > 1 else ""
previous = list(range(len(b) + 1))
for i, ca in enumerate(a, 1):
    current = [i]
    for j, cb in enumerate(b, 1):
        current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
    previous = current
print(previous[-1])
""",
    "coding-022": """
import sys
lines = sys.stdin.read().split("\\n")
r, c = map(int, lines[0].split())
grid = [list(lines[1 + i]) for i in range(r)]
islands = 0
for i in range(r):
    for j in range(c):
        if grid[i][j] == "1":
            islands += 1
            grid[i][j] = "0"
            stack = [(i, j)]
            while stack:
                a, b = stack.pop()
                for x, y in ((a + 1, b), (a - 1, b), (a, b + 1), (a, b - 1)):
                    if 0 <= x < r and 0 <= y < c and grid[x][y] == "1":
                        grid[x][y] = "0"
                        stack.append((x, y))
print(islands)
""",
    "coding-023": """
import sys
data = sys.stdin.read().split()
r, c = int(data[0]), int(data[1])
m = [data[2 + i * c : 2 + (i + 1) * c] for i in range(r)]
out = []
top, bottom, left, right = 0, r - 1, 0, c - 1
while top <= bottom and left <= right:
    out += [m[top][j] for j in range(left, right + 1)]
    out += [m[i][right] for i in range(top + 1, bottom + 1)]
    if top < bottom:
        out += [m[bottom][j] for j in range(right - 1, left - 1, -1)]
    if left < right:
        out += [m[i][left] for i in range(bottom - 1, top, -1)]
    top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
print(" ".join(out))
""",
    "coding-024": """
import sys
from collections import Counter
data = sys.stdin.read().split()
n, target = int(data[0]), int(data[1])
seen = Counter()
pairs = 0
for x in map(int, data[2:2 + n]):
    pairs += seen[target - x]
    seen[x] += 1
print(pairs)
""",
}
