#!/usr/bin/env python3
# ruff: noqa: RUF001  (en dashes in subjects are deliberate: real mail has them)
"""Deterministic generator for the email environment's mailbox fixture.

Writes ``mailbox.json`` next to this file: the mailbox of Alex Morgan, operations manager
at Northwind Traders, on Friday 14 June 2024. About sixty messages in four folders (INBOX,
Sent, Archive, Newsletters): several threads (a meeting to schedule, a contract renewal, an
offsite to plan), invoices and quotes with PDF attachments, a calendar invitation, photos,
newsletters and internal noise. The tasks in ``tasks.json`` refer to messages by their
Message-ID, which this script derives from each message's key.

Each folder's messages get UIDs 1, 2, ... in date order, exactly as an IMAP server assigns
them when the fixture is appended in that order; so a message's tool id (``INBOX/12``) is the
same in sim and against a real IMAP server seeded with the fixture.

Python stdlib only, no randomness; regenerate with::

    python servers/email/data/generate.py
"""

from __future__ import annotations

import datetime as dt
import json
import zlib
from pathlib import Path

OUT_PATH = Path(__file__).resolve().parent / "mailbox.json"
NOW = "2024-06-14T09:00:00Z"
FOLDERS = ["INBOX", "Sent", "Archive", "Newsletters"]

Person = tuple[str, str]

ME: Person = ("Alex Morgan", "alex.morgan@northwind.example")
PRIYA: Person = ("Priya Raman", "priya.raman@northwind.example")
DAN: Person = ("Dan Okafor", "dan.okafor@northwind.example")
LENA: Person = ("Lena Fischer", "lena.fischer@northwind.example")
MARCUS: Person = ("Marcus Bell", "marcus.bell@northwind.example")
ZOE: Person = ("Zoë Laurent", "zoe.laurent@northwind.example")
SAM: Person = ("Sam Whitaker", "sam.whitaker@northwind.example")
FACILITIES: Person = ("Northwind Facilities", "facilities@northwind.example")
ACCOUNTING: Person = ("Accounting", "accounting@northwind.example")
ALL_STAFF: Person = ("All Staff", "all-staff@northwind.example")
COMMS: Person = ("Northwind Comms", "comms@northwind.example")
EXPENSES: Person = ("Northwind Expenses", "expenses@northwind.example")
RITA: Person = ("Rita Chen", "rita.chen@globex.example")
GLOBEX_BILLING: Person = ("Globex Billing", "billing@globex.example")
BRIGHTSPARK: Person = ("BrightSpark Energy", "invoices@brightspark.example")
PAPERTRAIL: Person = ("PaperTrail Supplies", "ar@papertrail-supplies.example")
CLOUDNEST: Person = ("CloudNest Billing", "billing@cloudnest.example")
OMAR: Person = ("Omar Haddad", "omar.haddad@contoso.example")
CITYCOWORK: Person = ("CityCowork Events", "events@citycowork.example")
LAKESIDE: Person = ("Lakeside Lodge", "events@lakesidelodge.example")
SKYWAYS: Person = ("Skyways", "bookings@skyways.example")
TECHWEEKLY: Person = ("Tech Weekly", "news@techweekly.example")
PRODUCTLETTER: Person = ("The Product Letter", "digest@productletter.example")
LINKEDUP: Person = ("LinkedUp", "notifications@linkedup.example")

PDF = "application/pdf"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
JPEG = "image/jpeg"
ICS = "text/calendar"

# key, folder, date (UTC), from, to, cc, subject, body, attachments [(name, type)], parent key, unread
# A parent key makes the message a reply: In-Reply-To is the parent, References the parent's chain.
MESSAGES: list[dict[str, object]] = []


def msg(
    key: str,
    folder: str,
    date: str,
    sender: Person,
    to: list[Person],
    subject: str,
    body: str,
    *,
    cc: list[Person] | None = None,
    attachments: list[tuple[str, str]] | None = None,
    parent: str | None = None,
    unread: bool = False,
    reply_to: Person | None = None,
) -> None:
    MESSAGES.append(
        {
            "key": key,
            "folder": folder,
            "date": date,
            "from": sender,
            "to": to,
            "cc": cc or [],
            "reply_to": reply_to,
            "subject": subject,
            "body": body.strip("\n"),
            "attachments": attachments or [],
            "parent": parent,
            "unread": unread,
        }
    )


# Archive: older, read ----------------------------------------------------------------------
msg(
    "papertrail-7519",
    "Archive",
    "2024-04-12T09:20:00Z",
    PAPERTRAIL,
    [ME],
    "Invoice 7519 – office supplies",
    """
Hello,

Please find attached invoice 7519 for the office supplies delivered on April 10.

Total: $287.10
Payment due: May 12, 2024

Thank you for your business,
PaperTrail Supplies – Accounts Receivable
""",
    attachments=[("Invoice-7519.pdf", PDF)],
)
msg(
    "cloudnest-welcome",
    "Archive",
    "2024-04-22T15:02:00Z",
    CLOUDNEST,
    [ME],
    "Welcome to CloudNest",
    """
Hi Alex,

Your CloudNest account is ready. Invoices are issued on the 12th of each month and are
available in the billing portal.

The CloudNest team
""",
)
msg(
    "q2-budget-notes",
    "Archive",
    "2024-05-02T10:45:00Z",
    PRIYA,
    [ME],
    "Q2 budget review notes",
    """
Hi Alex,

Notes from the Q2 budget review are attached. Operations came in 3% under budget; travel is
the only line over plan.

Priya
""",
    attachments=[("Q2-budget-review.xlsx", XLSX)],
)
msg(
    "hiring-h2",
    "Archive",
    "2024-05-08T13:10:00Z",
    DAN,
    [ME],
    "Re: Hiring plan for H2",
    """
Alex,

Agreed: two backend engineers in Q3 and one SRE in Q4. I'll draft the job descriptions.

Dan
""",
    parent="hiring-h2-root",
)
msg(
    "vpn-maintenance",
    "Archive",
    "2024-05-14T08:00:00Z",
    SAM,
    [ALL_STAFF],
    "VPN maintenance on May 18",
    """
Hi all,

The VPN will be down for maintenance on Saturday May 18 from 08:00 to 12:00.

Sam (IT)
""",
)
msg(
    "globex-qbr",
    "Archive",
    "2024-05-20T16:30:00Z",
    RITA,
    [ME],
    "Globex quarterly business review – slides",
    """
Hi Alex,

Thanks for your time today. The slides from our quarterly business review are attached.

Best,
Rita Chen
Account Manager, Globex
""",
    attachments=[("Globex-QBR-Q2.pdf", PDF)],
)
msg(
    "papertrail-7519-paid",
    "Archive",
    "2024-05-28T11:00:00Z",
    ACCOUNTING,
    [ME],
    "Payment confirmation: PaperTrail invoice 7519",
    """
Hi Alex,

PaperTrail invoice 7519 ($287.10) was paid on May 10. No action needed.

Accounting
""",
)
msg(
    "benefits-enrolment",
    "Archive",
    "2024-05-30T09:00:00Z",
    ZOE,
    [ALL_STAFF],
    "Benefits enrolment closes June 7",
    """
Hello everyone,

A reminder that benefits enrolment for the new plan year closes on Friday June 7.

Zoë (People team)
""",
)

# Newsletters ---------------------------------------------------------------------------------
msg(
    "techweekly-212",
    "Newsletters",
    "2024-05-24T06:00:00Z",
    TECHWEEKLY,
    [ME],
    "Tech Weekly #212: AI copilots for finance teams",
    """
This week: how finance teams use AI copilots for invoice automation, a look at open-source
observability stacks, and five tips for faster code review.
""",
    reply_to=("Tech Weekly", "no-reply@techweekly.example"),
)
msg(
    "productletter-pricing",
    "Newsletters",
    "2024-05-29T07:00:00Z",
    PRODUCTLETTER,
    [ME],
    "The Product Letter: pricing pages that convert",
    """
Pricing pages that convert: show three tiers, lead with outcomes, and make the enterprise tier
a conversation.
""",
)
msg(
    "techweekly-213",
    "Newsletters",
    "2024-05-31T06:00:00Z",
    TECHWEEKLY,
    [ME],
    "Tech Weekly #213: the return of the monolith",
    """
This week: teams moving back to monoliths, a primer on vector databases, and the best talks
from the spring conferences.
""",
    reply_to=("Tech Weekly", "no-reply@techweekly.example"),
)
msg(
    "techweekly-214",
    "Newsletters",
    "2024-06-07T06:00:00Z",
    TECHWEEKLY,
    [ME],
    "Tech Weekly #214: shipping on Fridays",
    """
This week: should you deploy on Fridays? Plus: feature flags done right and a new release of
your favourite terminal.
""",
    reply_to=("Tech Weekly", "no-reply@techweekly.example"),
)
msg(
    "productletter-onboarding",
    "Newsletters",
    "2024-06-12T07:00:00Z",
    PRODUCTLETTER,
    [ME],
    "The Product Letter: onboarding checklists",
    """
Onboarding checklists that people finish: fewer steps, progress you can see, and a reward at
the end.
""",
    unread=True,
)

# Sent ------------------------------------------------------------------------------------------
msg(
    "offsite-ack",
    "Sent",
    "2024-06-03T11:00:00Z",
    ME,
    [ZOE],
    "Re: Team offsite in July",
    """
Hi Zoë,

Sure, I'll ask CityCowork and Lakeside Lodge for quotes and come back with a recommendation.

Alex
""",
    parent="offsite-request",
)
msg(
    "summit-flights",
    "Sent",
    "2024-06-04T14:30:00Z",
    ME,
    [DAN],
    "Booking your summit flights",
    """
Hi Dan,

I'm booking your flights for the vendor summit today; you'll fly out on Monday June 17.

Alex
""",
)
msg(
    "quote-request-lakeside",
    "Sent",
    "2024-06-05T09:00:00Z",
    ME,
    [LAKESIDE],
    "Quote request: July 11–12 for 24 people",
    """
Hello,

Could you send us a quote for a meeting room with catering for 24 people on July 11–12?

Kind regards,
Alex Morgan
Northwind Traders
""",
)
msg(
    "quote-request-citycowork",
    "Sent",
    "2024-06-05T09:05:00Z",
    ME,
    [CITYCOWORK],
    "Quote request: July 11–12 for 24 people",
    """
Hello,

Could you send us a quote for a meeting room with catering for 24 people on July 11–12?

Kind regards,
Alex Morgan
Northwind Traders
""",
)
msg(
    "globex-renewal-ack",
    "Sent",
    "2024-06-06T09:10:00Z",
    ME,
    [RITA],
    "Re: Globex support contract GX-4471 renewal",
    """
Thanks Rita, I'll check with finance and get back to you.

Alex
""",
    parent="globex-renewal",
)
msg(
    "q2-sales-congrats",
    "Sent",
    "2024-06-10T17:00:00Z",
    ME,
    [MARCUS],
    "Re: Q2 sales numbers",
    """
Great result, congratulations to the whole team!

Alex
""",
    parent="q2-sales",
)
msg(
    "parking-pass",
    "Sent",
    "2024-06-11T12:00:00Z",
    ME,
    [FACILITIES],
    "Parking pass for the new office",
    """
Hello,

Could I get a parking pass for the new building? My plate number is NW-4821.

Thanks,
Alex
""",
)

# INBOX ---------------------------------------------------------------------------------------
msg(
    "globex-invoice-20931",
    "INBOX",
    "2024-06-03T08:02:00Z",
    GLOBEX_BILLING,
    [ME],
    "Invoice INV-GX-20931 for May support",
    """
Dear customer,

Please find attached invoice INV-GX-20931 for support services in May 2024
(contract GX-4471).

Amount due: $1,433.33
Due date: June 30, 2024

Globex Billing
""",
    attachments=[("invoice-INV-GX-20931.pdf", PDF)],
)
msg(
    "q2-sales",
    "INBOX",
    "2024-06-03T09:30:00Z",
    MARCUS,
    [ME],
    "Q2 sales numbers",
    """
Alex,

Q2 closed at $2.41M, 6% above target. Details at Monday's all-hands.

Marcus
""",
)
msg(
    "offsite-request",
    "INBOX",
    "2024-06-03T10:15:00Z",
    ZOE,
    [ME],
    "Team offsite in July",
    """
Hi Alex,

We're planning the team offsite for July 11–12, about 24 people. Could you collect quotes from
two venues (with catering) and recommend one?

Thanks,
Zoë
""",
)
msg(
    "move-instructions",
    "INBOX",
    "2024-06-04T09:00:00Z",
    FACILITIES,
    [ALL_STAFF],
    "Office move on June 28: what you need to do",
    """
Hi everyone,

We move to the new office on Friday June 28. What you need to do:

1. Have your desk packed by Thursday June 27 at 17:00. Crates arrive on Monday June 17.
2. Label every crate with your name and new desk number.
3. Take valuables home.

New address: 400 Harbor Boulevard, 5th floor.

Northwind Facilities
""",
)
msg(
    "skyways-booking",
    "INBOX",
    "2024-06-04T14:10:00Z",
    SKYWAYS,
    [ME],
    "Your Skyways booking 7KQ2LM is confirmed",
    """
Booking reference: 7KQ2LM
Passenger: Dan Okafor

Flight SK 482, Monday 17 June 2024
Departs 07:15 from Northport (NPT), arrives 09:05 at Riverton (RVT).

Booked by Alex Morgan. Your e-ticket receipt is attached.
""",
    attachments=[("e-ticket-7KQ2LM.pdf", PDF)],
)
msg(
    "brightspark-invoice",
    "INBOX",
    "2024-06-05T07:40:00Z",
    BRIGHTSPARK,
    [ME],
    "Your BrightSpark Energy invoice for May (#BS-558120)",
    """
Hello Northwind Traders,

Your invoice BS-558120 for electricity used in May is attached.

Amount: €842.17
Due date: 25 June 2024

Direct debit is not set up for this account; please pay by bank transfer.

BrightSpark Energy
""",
    attachments=[("invoice_BS-558120.pdf", PDF)],
)
msg(
    "globex-renewal",
    "INBOX",
    "2024-06-05T14:22:00Z",
    RITA,
    [ME],
    "Globex support contract GX-4471 renewal",
    """
Hi Alex,

Your Globex support contract GX-4471 expires on June 30. The renewal price for the next twelve
months is $18,400 (up from $17,200 this year), which includes the new 24/7 phone line.

Could you confirm the renewal by June 21?

Best,
Rita Chen
Account Manager, Globex
""",
)
msg(
    "citycowork-quote",
    "INBOX",
    "2024-06-06T11:30:00Z",
    CITYCOWORK,
    [ME],
    "Quote CC-2291: Harbor Room, July 11–12",
    """
Dear Alex,

Thank you for your enquiry. Our quote CC-2291 for the Harbor Room, 24 guests on July 11–12,
full-day catering included: €3,150 in total. The quote is valid until June 21.

CityCowork Events
""",
    attachments=[("quote-CC-2291.pdf", PDF)],
)
msg(
    "globex-budget",
    "INBOX",
    "2024-06-07T10:05:00Z",
    PRIYA,
    [ME],
    "Globex renewal budget",
    """
Alex,

Finance approved the Globex renewal up to $18,000 per year. If they won't go below $18,400,
ask for quarterly billing instead.

Priya
""",
)
msg(
    "summit-travel",
    "INBOX",
    "2024-06-07T16:45:00Z",
    DAN,
    [ME],
    "Vendor summit travel",
    """
Hi Alex,

Can you send me my flight details for the vendor summit (flight number and departure time)?
I can't find the booking email.

Thanks!
Dan
""",
)
msg(
    "papertrail-7734",
    "INBOX",
    "2024-06-09T12:00:00Z",
    PAPERTRAIL,
    [ME],
    "Invoice 7734 – office supplies",
    """
Hello,

Please find attached invoice 7734 for the office supplies delivered on June 6.

Total: $312.40
Payment due: July 9, 2024

Thank you for your business,
PaperTrail Supplies – Accounts Receivable
""",
    attachments=[("Invoice-7734.pdf", PDF)],
)
msg(
    "q3-planning",
    "INBOX",
    "2024-06-10T08:30:00Z",
    PRIYA,
    [ME, DAN, LENA],
    "Q3 planning meeting",
    """
Hi all,

We need to lock a time for the Q3 planning meeting (90 minutes). Options:

- Tuesday June 18 at 10:00
- Wednesday June 19 at 15:00
- Thursday June 20 at 14:00

Please reply with what works for you.

Priya
""",
)
msg(
    "lakeside-quote",
    "INBOX",
    "2024-06-10T09:15:00Z",
    LAKESIDE,
    [ME],
    "Quote Q-771 – Lakeside Lodge, July 11–12",
    """
Dear Mr Morgan,

Thank you for considering Lakeside Lodge. Quote Q-771 for 24 guests on July 11–12, meeting
room and full board: €4,080. Details are in the attached PDF.

Lakeside Lodge Events
""",
    attachments=[("Lakeside-Q-771.pdf", PDF)],
)
msg(
    "q3-planning-dan",
    "INBOX",
    "2024-06-10T11:05:00Z",
    DAN,
    [PRIYA],
    "Re: Q3 planning meeting",
    """
Tuesday doesn't work for me, I'm at the vendor summit. Wednesday or Thursday are both fine.

Dan
""",
    cc=[ME, LENA],
    parent="q3-planning",
)
msg(
    "q3-planning-lena",
    "INBOX",
    "2024-06-11T09:20:00Z",
    LENA,
    [PRIYA],
    "Re: Q3 planning meeting",
    """
Wednesday 15:00 clashes with a customer demo. Thursday at 14:00 works for me.

Lena
""",
    cc=[ME, DAN],
    parent="q3-planning-dan",
)
msg(
    "security-training",
    "INBOX",
    "2024-06-11T10:00:00Z",
    SAM,
    [ALL_STAFF],
    "Security awareness training due June 28",
    """
Hi all,

Please complete the annual security awareness training (about 40 minutes) by June 28.

Sam (IT)
""",
)
msg(
    "desk-packing",
    "INBOX",
    "2024-06-11T13:30:00Z",
    DAN,
    [ME],
    "Desk packing for the move",
    """
Quick question: by when do we need to have our desks packed for the office move? I lost the
facilities email.

Dan
""",
)
msg(
    "q3-planning-priya",
    "INBOX",
    "2024-06-11T16:40:00Z",
    PRIYA,
    [ME, DAN, LENA],
    "Re: Q3 planning meeting",
    """
Thursday at 14:00 works for me as well. Alex, could you confirm to everyone and book a room?

Priya
""",
    parent="q3-planning-lena",
)
msg(
    "contoso-damaged",
    "INBOX",
    "2024-06-12T08:10:00Z",
    OMAR,
    [ME],
    "Order #58213 arrived damaged",
    """
Hello,

Our order #58213 (six Aalto chairs) arrived this morning, and two of the chairs have broken
legs. Photos attached. How will you fix this?

Omar Haddad
Office Manager, Contoso
""",
    attachments=[("chair-1.jpg", JPEG), ("chair-2.jpg", JPEG)],
    unread=True,
)
msg(
    "contoso-sales",
    "INBOX",
    "2024-06-12T09:05:00Z",
    MARCUS,
    [ME],
    "Contoso damaged chairs",
    """
Alex,

Contoso is one of our key accounts. For Omar's damaged order, please offer a free replacement
shipped by express (it arrives within 3 business days). They don't need to return the broken
chairs.

Marcus
""",
)
msg(
    "design-review-invite",
    "INBOX",
    "2024-06-12T10:30:00Z",
    LENA,
    [ME],
    "Invitation: Design review @ Wed Jun 19, 11:00 – 12:00 (Tycho room)",
    """
Lena Fischer has invited you to a meeting.

Design review
When: Wednesday June 19, 2024, 11:00 – 12:00
Where: Tycho room

Accept or decline from the attached invitation.
""",
    attachments=[("invite.ics", ICS)],
)
msg(
    "globex-renewal-followup",
    "INBOX",
    "2024-06-12T11:45:00Z",
    RITA,
    [ME],
    "Re: Globex support contract GX-4471 renewal",
    """
Hi Alex,

Just following up: can you confirm the renewal at $18,400 before June 21?

Best,
Rita
""",
    parent="globex-renewal-ack",
    unread=True,
)
msg(
    "offsite-rsvps",
    "INBOX",
    "2024-06-12T14:00:00Z",
    LENA,
    [ME],
    "Offsite RSVPs",
    """
Hi Alex,

RSVPs for the July offsite so far: 19 confirmed, 3 maybe, 2 declined. I'll chase the maybes
on Monday.

Lena
""",
    unread=True,
)
msg(
    "jordan-feedback",
    "INBOX",
    "2024-06-12T15:20:00Z",
    ZOE,
    [ME],
    "Interview feedback: Jordan Lee",
    """
Hi Alex,

Please add your interview feedback for Jordan Lee in the hiring tool by Monday.

Thanks,
Zoë
""",
)
msg(
    "globex-invoice-question",
    "INBOX",
    "2024-06-12T17:05:00Z",
    PRIYA,
    [ME],
    "Globex invoice amount?",
    """
Hi Alex,

What's the amount on Globex's May invoice? I want to check it against the purchase order.

Priya
""",
    unread=True,
)
msg(
    "techweekly-215",
    "INBOX",
    "2024-06-13T06:00:00Z",
    TECHWEEKLY,
    [ME],
    "Tech Weekly #215: the state of email automation",
    """
This week: the state of email automation, a field guide to rate limiting, and what's new in
Python 3.13.
""",
    reply_to=("Tech Weekly", "no-reply@techweekly.example"),
    unread=True,
)
msg(
    "cloudnest-invoice",
    "INBOX",
    "2024-06-13T08:45:00Z",
    CLOUDNEST,
    [ME],
    "CloudNest invoice CN-2024-0612 is available",
    """
Hi Alex,

Your CloudNest invoice CN-2024-0612 for June hosting is attached.

Amount: $689.00
Due date: June 27, 2024

The CloudNest team
""",
    attachments=[("cloudnest-CN-2024-0612.pdf", PDF)],
    unread=True,
)
msg(
    "laptop-refresh",
    "INBOX",
    "2024-06-13T09:30:00Z",
    SAM,
    [ME],
    "Laptop refresh: pick a slot",
    """
Hi Alex,

Your laptop is due for replacement. Available slots for the swap (about 45 minutes):

- Monday June 17 at 09:30
- Monday June 17 at 13:00
- Tuesday June 18 at 16:00

Reply with the one you want.

Sam (IT)
""",
    unread=True,
)
msg(
    "brightspark-question",
    "INBOX",
    "2024-06-13T10:10:00Z",
    PRIYA,
    [ME],
    "BrightSpark bill for the cash forecast",
    """
Quick one: how much is the BrightSpark energy bill for May, and when is it due? I need it for
the cash forecast.

Priya
""",
    unread=True,
)
msg(
    "globex-call",
    "INBOX",
    "2024-06-13T11:00:00Z",
    RITA,
    [ME],
    "Call about the GX-4471 renewal",
    """
Hi Alex,

Could we do a 30-minute call about the renewal terms? I can do Tuesday June 18 at 09:00 or
Wednesday June 19 at 11:00.

Best,
Rita
""",
    unread=True,
)
msg(
    "offsite-headcount",
    "INBOX",
    "2024-06-13T12:30:00Z",
    ZOE,
    [ME],
    "Offsite headcount?",
    """
Hi Alex,

How many people have confirmed for the offsite so far? I need the number for the catering.

Zoë
""",
    unread=True,
)
msg(
    "pricing-typo",
    "INBOX",
    "2024-06-13T14:15:00Z",
    MARCUS,
    [ME],
    "Pricing page typo",
    """
The enterprise tier on the pricing page says "per mounth". Can someone fix it before Monday?

Marcus
""",
    cc=[LENA],
    unread=True,
)
msg(
    "all-hands-recap",
    "INBOX",
    "2024-06-13T15:00:00Z",
    COMMS,
    [ALL_STAFF],
    "All-hands recap: H1 results",
    """
Thanks to everyone who joined the all-hands. Highlights: Q2 revenue 6% above target, the new
office opens June 28, and the team offsite is planned for July.
""",
    unread=True,
)
msg(
    "password-expiry",
    "INBOX",
    "2024-06-13T16:20:00Z",
    SAM,
    [ME],
    "Your password expires in 5 days",
    """
Your Northwind password expires in 5 days. Change it from the account portal before it does.

Sam (IT)
""",
    unread=True,
)
msg(
    "lunch",
    "INBOX",
    "2024-06-13T18:00:00Z",
    DAN,
    [ME],
    "Lunch next week?",
    """
Want to grab lunch on Wednesday? The new ramen place near the new office is open.

Dan
""",
    unread=True,
)
msg(
    "expense-approved",
    "INBOX",
    "2024-06-14T07:30:00Z",
    EXPENSES,
    [ME],
    "Your expense report ER-1182 was approved",
    """
Your expense report ER-1182 (€146.20, client dinner) was approved and will be paid with the
June salary.
""",
    unread=True,
)
msg(
    "linkedup",
    "INBOX",
    "2024-06-14T08:05:00Z",
    LINKEDUP,
    [ME],
    "You appeared in 12 searches this week",
    """
You appeared in 12 searches this week. See who's looking at your profile.
""",
    unread=True,
)
msg(
    "crates-reminder",
    "INBOX",
    "2024-06-14T08:40:00Z",
    FACILITIES,
    [ALL_STAFF],
    "Reminder: moving crates arrive Monday",
    """
Reminder: moving crates arrive on Monday June 17. Desks must be packed by Thursday June 27 at
17:00.

Northwind Facilities
""",
    unread=True,
)


def message_id(key: str, sender: Person) -> str:
    return f"<{key}@{sender[1].split('@', 1)[1]}>"


def size_of(filename: str, content_type: str) -> int:
    """A plausible, deterministic attachment size in bytes."""
    base = {PDF: 38_000, XLSX: 21_000, JPEG: 180_000, ICS: 1_200}[content_type]
    return base + zlib.crc32(filename.encode()) % (base // 2)


def person(p: Person) -> dict[str, str]:
    return {"name": p[0], "address": p[1]}


def build() -> dict[str, object]:
    ids: dict[str, str] = {str(m["key"]): message_id(str(m["key"]), m["from"]) for m in MESSAGES}  # type: ignore[arg-type]
    chains: dict[str, list[str]] = {}
    ordered = sorted(MESSAGES, key=lambda m: (FOLDERS.index(str(m["folder"])), str(m["date"])))
    for m in sorted(MESSAGES, key=lambda m: str(m["date"])):
        parent = m["parent"]
        if parent is None:
            chains[str(m["key"])] = []
        else:
            parent_id = ids.get(str(parent), f"<{parent}@northwind.example>")
            chains[str(m["key"])] = [*chains.get(str(parent), []), parent_id]
    uids: dict[str, int] = {}
    out = []
    for m in ordered:
        folder = str(m["folder"])
        uids[folder] = uids.get(folder, 0) + 1
        refs = chains[str(m["key"])]
        out.append(
            {
                "folder": folder,
                "uid": uids[folder],
                "message_id": ids[str(m["key"])],
                "date": m["date"],
                "from": person(m["from"]),  # type: ignore[arg-type]
                "to": [person(p) for p in m["to"]],  # type: ignore[attr-defined]
                "cc": [person(p) for p in m["cc"]],  # type: ignore[attr-defined]
                "reply_to": person(m["reply_to"]) if m["reply_to"] else None,  # type: ignore[arg-type]
                "subject": m["subject"],
                "in_reply_to": refs[-1] if refs else None,
                "references": refs,
                "unread": m["unread"],
                "body": m["body"],
                "attachments": [
                    {"filename": name, "content_type": kind, "size": size_of(name, kind)}
                    for name, kind in m["attachments"]  # type: ignore[attr-defined]
                ],
            }
        )
    dates = [dt.datetime.fromisoformat(str(m["date"]).replace("Z", "+00:00")) for m in MESSAGES]
    assert max(dates) < dt.datetime.fromisoformat(NOW.replace("Z", "+00:00")), "a message is dated after NOW"
    assert len(set(ids.values())) == len(ids), "duplicate Message-ID"
    return {"owner": person(ME), "now": NOW, "folders": FOLDERS, "messages": out}


if __name__ == "__main__":
    OUT_PATH.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(MESSAGES)} messages to {OUT_PATH}")
