"""Alert e-mails to the operator (ALERTS_EMAIL) through the configured SMTP server.

With no recipient or no SMTP server configured, an alert is a warning in the
log instead, so it is never silently lost.
"""

import logging
import smtplib
import ssl
from email.message import EmailMessage

log = logging.getLogger("agent_platform.alerts")


def send_alert(config, subject, text):
    """E-mail the alert; return True when the SMTP server accepted it."""
    recipient, host = config.get("ALERTS_EMAIL"), config.get("SMTP_HOST")
    if not recipient or not host:
        log.warning("ALERT (no alert e-mail configured): %s\n%s", subject, text)
        return False
    message = EmailMessage()
    message["From"] = config["SMTP_FROM"]
    message["To"] = recipient
    message["Subject"] = subject
    message.set_content(text)
    try:
        with smtplib.SMTP(
            host, config["SMTP_PORT"], timeout=config["SMTP_TIMEOUT_SECONDS"]
        ) as smtp:
            if config["SMTP_STARTTLS"]:
                smtp.starttls(context=ssl.create_default_context())
            if config.get("SMTP_USERNAME"):
                smtp.login(config["SMTP_USERNAME"], config.get("SMTP_PASSWORD") or "")
            smtp.send_message(message)
    except (OSError, smtplib.SMTPException):
        log.exception("ALERT could not be e-mailed to %s: %s\n%s", recipient, subject, text)
        return False
    return True


def webhook_failing(config, alert):
    """A webhook's delivery failed every retry and the webhook turned failing."""
    subject = f"Webhook failing: {alert['url']}"
    text = (
        f"A delivery to the webhook {alert['webhook_id']} ({alert['url']}) of workspace "
        f"{alert['workspace_id']} failed on every retry at {alert['at']}.\n"
        f"The webhook's status is now 'failing'. It stays active and new events keep "
        f"being queued; the next successful delivery returns it to 'active'.\n"
        f"Failed deliveries in a row: {alert['consecutive_failures']}.\n"
        f"Description: {alert['description'] or '-'}\n\n"
        f"See GET /v1/webhooks/{alert['webhook_id']}/deliveries?status=failed, and "
        f"POST /v1/webhooks/{alert['webhook_id']}/recover?since=... to send them again.\n"
    )
    return send_alert(config, subject, text)
