"""The routing header of session calls (deploy/README.md, "Routing").

Every call of a session carries its id in ``tether-session-id``, so a proxy
in front of several replicas that hashes consistently on that header sends
all calls of one session to the same replica. Calls of no session
(CreateSession, ImportSession, Validate, Evaluate, ListSessions) carry none
and may go to any replica. The C++ client (client/lib/tether/client.h,
kRoutingHeader) sets the same header.
"""

from __future__ import annotations

from typing import Tuple

ROUTING_HEADER = "tether-session-id"


def routing_metadata(session_id: str) -> Tuple[Tuple[str, str], ...]:
    """The metadata of a call of session ``session_id``: none without one,
    or for an id that cannot be a header value (visible ASCII, at most 256
    characters; the server's are 32 hex digits), which goes unrouted to the
    server, whose answer says what is wrong with it."""
    routable = (0 < len(session_id) <= 256
                and all(" " <= c <= "~" for c in session_id))
    return ((ROUTING_HEADER, session_id),) if routable else ()
