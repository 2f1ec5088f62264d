"""Post one event to the Prefect API the environment points at (PREFECT_API_URL), or say why not.

A CLI run is not a flow run, so there is no events worker to hand the event to: we POST it to the
API's `/events` route (the route self-hosted Prefect 3 servers take events on; Prefect Cloud's
webhooks are a Cloud feature) through Prefect's own client, so PREFECT_API_KEY and TLS settings apply.
"""
from __future__ import annotations

from tunegate.errors import EventNotSent
from tunegate.events.payload import EventMessage


def send_event(message: EventMessage, timeout_s: float = 10.0) -> str:
    """Post the event; return its id. Raises EventNotSent when no Prefect API takes it."""
    url = _api_url()
    if not url:
        raise EventNotSent("--emit-event: no Prefect API to send the event to: set PREFECT_API_URL "
                           "(e.g. http://127.0.0.1:4200/api for `prefect server start`)")
    from prefect.client.orchestration import get_client
    from prefect.events import Event

    event = Event(event=message.event, resource=message.resource, payload=message.payload)
    body = [event.model_dump(mode="json")]
    try:
        with get_client(sync_client=True, httpx_settings={"timeout": timeout_s}) as client:
            response = client.request("POST", "/events", json=body)
    except Exception as exc:  # httpx's connect/timeout errors, and Prefect's own on a bad URL
        raise EventNotSent(f"--emit-event: the Prefect API at {url} did not take the event "
                           f"({type(exc).__name__}: {_first_line(exc)}); is the server running?") from None
    if response.status_code >= 300:
        raise EventNotSent(f"--emit-event: the Prefect API at {url} answered {response.status_code}: "
                           f"{_first_line(response.text)}")
    return str(event.id)


def _api_url() -> str | None:
    """PREFECT_API_URL from the environment, else from the active profile (`prefect config set ...`)."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def _first_line(value: object) -> str:
    text = str(value).strip()
    return text.splitlines()[0][:200] if text else "no detail"
