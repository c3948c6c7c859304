#!/usr/bin/env python3
"""The RADAU_IIA coefficients of server/engine/internal/integrate/radau_iia.h.

    scripts/radau_coefficients.py      (needs mpmath)

Prints, to 21 digits from 40-digit arithmetic: the 3-stage Radau IIA
tableau (c, a) and a^2; the eigen-decomposition a = T diag(gamma, mu,
conj mu) T^-1 (the columns t1, t2 of T normalised to a last entry 1, the
rows s1, s2 of T^-1) that decouples the simplified Newton system; and
RADAU5's embedded-estimate weights dd with the moments that make the
estimate O(h^4) (sum dd_i c_i = -1, sum dd_i c_i^2 = sum dd_i c_i^3 = 0).
"""
from mpmath import mp, mpf, sqrt, matrix, eig, cbrt, mpc, inverse, nstr
mp.dps = 40
s6 = sqrt(6)
c = [(4 - s6)/10, (4 + s6)/10, mpf(1)]
A = matrix([[(88 - 7*s6)/360, (296 - 169*s6)/1800, (-2 + 3*s6)/225],
            [(296 + 169*s6)/1800, (88 + 7*s6)/360, (-2 - 3*s6)/225],
            [(16 - s6)/36, (16 + s6)/36, mpf(1)/9]])
E, ER = eig(A)
print("eig", E)
# order: real first
idx = sorted(range(3), key=lambda i: abs(E[i].imag))
r = idx[0]; cc = [i for i in idx[1:] if E[i].imag < 0][0]
gam = E[r].real; mu = E[cc]
print("gamma", nstr(gam, 25), "check", nstr((6 + cbrt(81) - cbrt(9))/30, 25))
print("mu", nstr(mu.real, 25), nstr(mu.imag, 25))
t1 = [ER[i, r].real for i in range(3)]
t2 = [ER[i, cc] for i in range(3)]
t1 = [x / t1[2] for x in t1]
t2 = [x / t2[2] for x in t2]
T = matrix(3, 3)
for i in range(3):
    T[i, 0] = t1[i]; T[i, 1] = t2[i]; T[i, 2] = t2[i].conjugate()
S = inverse(T)
# check
L = matrix([[gam, 0, 0], [0, mu, 0], [0, 0, mu.conjugate()]])
print("resid", nstr(max(abs(x) for x in (T*L*S - A)), 5))
def p(name, v): print(name, "=", "{" + ", ".join(nstr(x, 21) for x in v) + "}")
p("t1", t1)
p("t2re", [x.real for x in t2]); p("t2im", [x.imag for x in t2])
p("s1", [S[0, j].real for j in range(3)]); print("s1 imag", [nstr(S[0,j].imag,3) for j in range(3)])
p("s2re", [S[1, j].real for j in range(3)]); p("s2im", [S[1, j].imag for j in range(3)])
p("A0", [A[0,j] for j in range(3)]); p("A1", [A[1,j] for j in range(3)]); p("A2", [A[2,j] for j in range(3)])
A2 = A*A
p("AA0", [A2[0,j] for j in range(3)]); p("AA1", [A2[1,j] for j in range(3)]); p("AA2", [A2[2,j] for j in range(3)])
p("c", c)
dd = [-(13 + 7*s6)/3, (-13 + 7*s6)/3, -mpf(1)/3]
p("dd", dd)
for k in range(1, 5):
    print("sum dd c^%d" % k, nstr(sum(dd[i]*c[i]**k for i in range(3)), 5))
