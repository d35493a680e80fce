#!/bin/sh
# aiosmtpd delivers every message to the Maildir (as nobody); Dovecot serves the same Maildir over IMAP.
set -eu
: "${MAIL_USER:?set MAIL_USER}" "${MAIL_PASSWORD:?set MAIL_PASSWORD}"
install -d -o nobody -g nogroup -m 0755 /var/mail/box
printf '%s:{PLAIN}%s\n' "$MAIL_USER" "$MAIL_PASSWORD" > /etc/dovecot/openenv.passwd
setpriv --reuid=65534 --regid=65534 --clear-groups \
    /usr/bin/python3 -m aiosmtpd -n -l 0.0.0.0:2525 -c aiosmtpd.handlers.Mailbox /var/mail/box/Maildir &
exec dovecot -F -c /etc/dovecot/openenv.conf
