"""Settings of the email server (``EMAIL_*`` variables)."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["EmailSettings", "Security"]

Security = Literal["tls", "starttls", "none"]

_DEFAULT_PORTS = {
    "smtp": {"tls": 465, "starttls": 587, "none": 25},
    "imap": {"tls": 993, "starttls": 143, "none": 143},
}


class EmailSettings(BaseSettings):
    """Prod needs the sender address, the SMTP host, and the IMAP host and login; sim needs nothing.

    Ports default to the standard one for the security mode (SMTP 465 / 587 / 25, IMAP 993 / 143).
    """

    model_config = SettingsConfigDict(env_prefix="EMAIL_", extra="ignore")

    from_address: str | None = Field(
        default=None, description="The mailbox owner's address, used as From in prod, e.g. alex@example.com"
    )
    from_name: str | None = Field(default=None, description="Display name for From, e.g. Alex Morgan")

    smtp_host: str | None = Field(default=None, description="SMTP server for sending, e.g. smtp.example.com")
    smtp_port: int | None = Field(default=None, ge=1, le=65535, description="SMTP port (default from security)")
    smtp_security: Security = Field(
        default="starttls", description="tls (implicit, port 465), starttls (port 587) or none (local relays)"
    )
    smtp_username: str | None = Field(default=None, description="SMTP login; unset means no authentication")
    smtp_password: SecretStr | None = Field(default=None, description="SMTP password (with EMAIL_SMTP_USERNAME)")

    imap_host: str | None = Field(default=None, description="IMAP server for reading, e.g. imap.example.com")
    imap_port: int | None = Field(default=None, ge=1, le=65535, description="IMAP port (default from security)")
    imap_security: Security = Field(default="tls", description="tls (implicit, port 993), starttls or none")
    imap_username: str | None = Field(default=None, description="IMAP login, e.g. alex@example.com")
    imap_password: SecretStr | None = Field(default=None, description="IMAP password")
    imap_connections: int = Field(default=4, ge=1, le=64, description="IMAP connections kept open in prod")

    sent_folder: str = Field(default="Sent", description="Folder where prod files a copy of sent mail")
    save_sent: bool = Field(
        default=True, description="Append sent mail to the sent folder (off for servers that file it themselves)"
    )
    tls_ca_file: Path | None = Field(default=None, description="CA bundle to trust for SMTP and IMAP TLS")
    timeout: float = Field(default=15.0, gt=0, description="Seconds before an SMTP or IMAP operation gives up")

    sim_log: Path | None = Field(
        default=None, description="In sim, append every sent message to this file as a JSON line"
    )

    def port(self, protocol: Literal["smtp", "imap"]) -> int:
        """The configured port for ``protocol``, or the standard one for its security mode."""
        if protocol == "smtp":
            return self.smtp_port or _DEFAULT_PORTS["smtp"][self.smtp_security]
        return self.imap_port or _DEFAULT_PORTS["imap"][self.imap_security]

    def tls_context(self) -> ssl.SSLContext:
        """The TLS client context for both servers: the system's CAs, or ``EMAIL_TLS_CA_FILE``."""
        return ssl.create_default_context(cafile=str(self.tls_ca_file) if self.tls_ca_file else None)
