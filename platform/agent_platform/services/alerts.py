"""Alert e-mails to the operator (ALERTS_EMAIL) through the configured SMTP server.

With no recipient or no SMTP server configured, an alert is a warning in the
log instead, so it is never silently lost. Its headers go through
mailheaders like the e-mail channel's: the subject (which names a webhook's
URL, a workspace's choice) as one line of plain text, and the bytes read back
before they are sent.
"""

import logging
import smtplib
import ssl
from email.utils import getaddresses

from .. import mailheaders

log = logging.getLogger("agent_platform.alerts")


def send_alert(config, subject, text):
    """E-mail the alert; return True when the SMTP server accepted it."""
    recipient, host = config.get("ALERTS_EMAIL"), config.get("SMTP_HOST")
    if not recipient or not host:
        log.warning("ALERT (no alert e-mail configured): %s\n%s", subject, text)
        return False
    try:
        message = mailheaders.new_message()
        message["From"] = config["SMTP_FROM"]
        message["To"] = recipient
        message["Subject"] = mailheaders.text(subject)
        message.set_content(text)
        data = mailheaders.serialized(message)
    except ValueError as error:  # UnsafeHeader: SMTP_FROM or ALERTS_EMAIL
        log.error("ALERT could not be e-mailed to %s (%s): %s\n%s", recipient, error, subject, text)
        return False
    sender = getaddresses([str(message["From"])])[0][1]
    recipients = [address for _, address in getaddresses([str(message["To"])])]
    try:
        with smtplib.SMTP(
            host, config["SMTP_PORT"], timeout=config["SMTP_TIMEOUT_SECONDS"]
        ) as smtp:
            if config["SMTP_STARTTLS"]:
                smtp.starttls(context=ssl.create_default_context())
            if config.get("SMTP_USERNAME"):
                smtp.login(config["SMTP_USERNAME"], config.get("SMTP_PASSWORD") or "")
            smtp.sendmail(sender, recipients, data)
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
