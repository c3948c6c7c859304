"""The streaming calls: a Run's frames (RunStream), an ensemble's instance
results (EnsembleStream) and a lockstep co-simulation (CoSimulation)."""

from __future__ import annotations

import queue
from typing import Any, Callable, Iterator, List, Mapping, Optional, Union

import grpc

from tether_client._proto.tether.v1 import simulator_pb2
from tether_client.ensemble import EnsembleResult
from tether_client.errors import Explain, TetherError, _unchanged
from tether_client.results import Names, Trajectory
from tether_client.routing import routing_metadata

__all__ = ["CoSimulation", "EnsembleStream", "RunStream"]

#: Names, or what gives them when first needed (Client: one GetSession).
NamesSource = Union[Names, Callable[[], Optional[Names]], None]


def _resolve(names: NamesSource) -> Optional[Names]:
    return names() if callable(names) else names


class RunStream:
    """The frames of a Run, in order; ``certificate`` once iteration ends.

    Iterating raises TetherError when the run ends with an error (a run
    that fails numerically first yields every frame it computed, then raises
    ABORTED). ``cancel()`` stops it early. ``result()`` runs the stream to
    its end and gives the frames as arrays (a Trajectory; on an error, the
    frames received are the error's ``partial``)."""

    def __init__(self, call: Any, explain: Explain = _unchanged,
                 names: NamesSource = None) -> None:
        self._call = call
        self._explain = explain
        self._names = names
        self.certificate: Any = None

    def __iter__(self) -> Iterator[Any]:
        try:
            for response in self._call:
                yield from response.frames
                if response.HasField("certificate"):
                    self.certificate = response.certificate
        except grpc.RpcError as error:
            raise self._explain(TetherError.from_rpc_error(error)) from None

    def frames(self) -> List[Any]:
        """Every frame as a list (runs the stream to its end)."""
        return list(self)

    def result(self, names: Optional[Names] = None) -> Trajectory:
        """Every frame as arrays, with the certificate (runs the stream to
        its end). ``names`` (or the session's description, when this client
        created the session) names the columns. When the run ends with an
        error, the TetherError's ``partial`` is the Trajectory of the frames
        received before it (a run that fails numerically streams every
        frame it computed first), so that none is lost."""
        frames: List[Any] = []
        try:
            for frame in self:
                frames.append(frame)
        except TetherError as error:
            certificate = self.certificate
            error.set_partial_lazily(lambda: Trajectory.from_frames(
                frames, names or _resolve(self._names), certificate=certificate))
            raise
        return Trajectory.from_frames(frames, names or _resolve(self._names),
                                      certificate=self.certificate)

    def cancel(self) -> None:
        self._call.cancel()


class EnsembleStream:
    """The instance results of a RunEnsemble as they arrive, in instance
    order (each a tether.v1.EnsembleInstanceResult): a program can write or
    reduce them one by one instead of holding the whole ensemble.

    ``done`` and ``total`` are the server's count after the last message
    read, ``reduction`` the EnsembleReduction once iteration ends (with
    ``reduce``). Iterating raises TetherError when the call fails, after
    every result received before it (a drain at shutdown sends the results
    up to the first gap, then UNAVAILABLE). ``cancel()`` stops it.
    ``result()`` runs it to its end and gives an EnsembleResult (on an
    error, the results received are the error's ``partial``)."""

    def __init__(self, call: Any, seed: int = 0, explain: Explain = _unchanged,
                 names: NamesSource = None,
                 progress: Optional[Callable[[int, int], Any]] = None) -> None:
        self._call = call
        self._seed = seed
        self._explain = explain
        self._names = names
        self._progress = progress
        self.done = 0
        self.total = 0
        self.reduction: Any = None

    def __iter__(self) -> Iterator[Any]:
        try:
            for response in self._call:
                self.done, self.total = response.done, response.total
                if response.HasField("reduction"):
                    self.reduction = response.reduction
                yield from response.results
                if self._progress is not None:
                    self._progress(response.done, response.total)
        except grpc.RpcError as error:
            raise self._explain(TetherError.from_rpc_error(error)) from None

    def result(self) -> EnsembleResult:
        """Every instance's result as arrays (runs the stream to its end)."""
        results: List[Any] = []
        try:
            for r in self:
                results.append(r)
        except TetherError as error:
            # The instances received travel with the error instead of being
            # dropped; made into arrays only when read.
            if results:
                names = _resolve(self._names)
                error.set_partial_lazily(lambda: EnsembleResult.from_results(
                    results, seed=self._seed, names=names))
            raise
        return EnsembleResult.from_results(results, seed=self._seed,
                                           names=_resolve(self._names),
                                           reduction=self.reduction)

    def cancel(self) -> None:
        self._call.cancel()


class CoSimulation:
    """A lockstep CoSimulate stream (FMI doStep style). Use as a context
    manager or call close(); step() advances by exactly
    ``communication_step`` with ``inputs`` held over the step and returns
    (frame, certificate) at the new time. The frames that move the session
    (steps and restores) are kept: ``trajectory()`` gives them as arrays."""

    _END = object()

    def __init__(self, stub: Any, session_id: str,
                 timeout: Optional[float] = None,
                 explain: Explain = _unchanged,
                 names: NamesSource = None,
                 write_through: Optional[bool] = None) -> None:
        self.session_id = session_id
        self._write_through = write_through
        self._explain = explain
        self._names = names
        self._requests: "queue.Queue[Any]" = queue.Queue()
        self._first = True
        self._closed = False
        self._frames: List[Any] = []
        self._responses = stub.CoSimulate(
            self._request_iterator(), timeout=timeout,
            metadata=routing_metadata(session_id))

    def _request_iterator(self) -> Iterator[Any]:
        while True:
            request = self._requests.get()
            if request is self._END:
                return
            yield request

    def step(self, communication_step: float,
             inputs: Optional[Mapping[str, float]] = None) -> Any:
        """(frame, certificate) after a step of ``communication_step`` (s)."""
        response = self.exchange(simulator_pb2.CoSimulateRequest(
            communication_step=communication_step, inputs=inputs or {}))
        return response.frame, response.certificate

    def try_step(self, communication_step: float,
                 inputs: Optional[Mapping[str, float]] = None) -> Any:
        """A step with FMI Discard semantics (ON_FAILURE_DISCARD): returns
        the CoSimulateResponse; when ``response.discarded`` the step failed
        numerically and was undone (the session is at
        ``response.last_successful_time``, ``response.discard_reason`` says
        why) and the stream goes on."""
        return self.exchange(simulator_pb2.CoSimulateRequest(
            communication_step=communication_step, inputs=inputs or {},
            on_failure=simulator_pb2.CoSimulateRequest.ON_FAILURE_DISCARD))

    def save_snapshot(self, label: str = "") -> Any:
        """Saves a snapshot of the session now (inside the stream); returns
        the Snapshot."""
        return self.exchange(simulator_pb2.CoSimulateRequest(
            save_snapshot=True, snapshot_label=label)).snapshot

    def restore_snapshot(self, snapshot_id: int) -> Any:
        """Puts the session back to a snapshot (inside the stream); returns
        the frame at the restored state."""
        return self.exchange(simulator_pb2.CoSimulateRequest(
            restore_snapshot_id=snapshot_id)).frame

    def exchange(self, request: Any) -> Any:
        """Sends one CoSimulateRequest as it is and returns its
        CoSimulateResponse (the session id is filled in on the first)."""
        if self._closed:
            raise TetherError(grpc.StatusCode.FAILED_PRECONDITION,
                              "the co-simulation stream is closed")
        if self._first:
            request.session_id = self.session_id
            if self._write_through is not None:
                request.write_through = self._write_through
            self._first = False
        self._requests.put(request)
        try:
            response = next(self._responses)
        except StopIteration:
            self._closed = True
            raise TetherError(grpc.StatusCode.INTERNAL,
                              "the server ended the co-simulation stream") from None
        except grpc.RpcError as error:
            self._closed = True
            raise self._explain(TetherError.from_rpc_error(error)) from None
        # The trajectory keeps the frames that move the session: a step's
        # (not a discarded one's, which repeats the last kept time) and a
        # restore's (a snapshot's or a state's: time may go back). A saved
        # snapshot's frame repeats the current state.
        moved = (request.communication_step > 0 and not response.discarded) or \
            request.restore_snapshot_id != 0 or request.HasField("restore_state")
        if moved and response.HasField("frame"):
            self._frames.append(response.frame)
        return response

    def trajectory(self, names: Optional[Names] = None) -> Trajectory:
        """The frames that moved the session so far, in the order received,
        as arrays: each completed step's and each restore's (a restored
        snapshot's or state's, whose time may go back), not a discarded
        step's or a saved snapshot's, which repeat the current state."""
        return Trajectory.from_frames(self._frames, names or _resolve(self._names))

    def close(self) -> None:
        """Half-closes the stream and waits for the server to end it."""
        if self._closed:
            return
        self._closed = True
        self._requests.put(self._END)
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                raise self._explain(TetherError.from_rpc_error(error)) from None

    def __enter__(self) -> "CoSimulation":
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()
        else:
            self._closed = True
            self._requests.put(self._END)
            self._responses.cancel()
