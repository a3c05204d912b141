"""How webhook deliveries are made, read once per job run from the configuration."""

from dataclasses import dataclass

from flask import current_app

from .. import netguard

POLICIES = ("failing", "deactivate")


# The settings that let the address guard allow a refused webhook URL (also
# used for intentions' URLs, which are called like webhooks).
GUARD_SETTINGS = ("webhooks.allow_private_targets", "webhooks.allowed_ports")


def refused(error):
    """The error of a URL the guard refused, naming the setting that allows it."""
    return f"URL refused: {netguard.refusal(error, *GUARD_SETTINGS)}"


@dataclass(frozen=True)
class Settings:
    timeout: float
    schedule: tuple
    policy: str
    deactivate_after: int
    allow_private: bool
    allowed_ports: tuple
    lease_seconds: int
    concurrency: int
    poll: float

    @classmethod
    def from_config(cls, config):
        policy = config["WEBHOOKS_FAILURE_POLICY"]
        if policy not in POLICIES:
            raise ValueError(f"WEBHOOKS_FAILURE_POLICY must be one of {', '.join(POLICIES)}")
        return cls(
            timeout=config["WEBHOOKS_TIMEOUT_SECONDS"],
            schedule=tuple(config["WEBHOOKS_RETRY_SCHEDULE"]),
            policy=policy,
            deactivate_after=config["WEBHOOKS_DEACTIVATE_AFTER"],
            allow_private=config["WEBHOOKS_ALLOW_PRIVATE_TARGETS"],
            allowed_ports=tuple(config["WEBHOOKS_ALLOWED_PORTS"]),
            lease_seconds=config["WEBHOOKS_LEASE_SECONDS"],
            concurrency=max(1, config["WEBHOOKS_CONCURRENCY"]),
            poll=config["WEBHOOKS_POLL_SECONDS"],
        )


def current_settings():
    return Settings.from_config(current_app.config)
