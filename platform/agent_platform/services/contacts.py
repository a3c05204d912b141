"""Contacts: E.164 phones, unique phone and e-mail, custom field values checked
against the workspace's definitions, identities on each network."""

import json

from .. import formats
from ..channels import adapters
from ..db import folded, transaction
from ..errors import Conflict, NotFound, ValidationError
from ..events import emit
from ..long_statements import long_statements
from ..models import Contact, ContactIdentity, Conversation, CustomField, fastsql, jsonquery
from ..models.base import utcnow
from ..models.pagination import paginate
from . import scoring

# What a contact's custom field values hold in all, each counted as JSON:
# one value may be 10,000 characters, but a workspace may have any number
# of fields, and a page of 100 contacts of 5 MB each was half a gigabyte.
MAX_CUSTOM_VALUES_CHARS = 100_000


def not_found(contact_id):
    return NotFound(f"Contact {contact_id} not found.", code="CONTACT_NOT_FOUND")


def get_contact(workspace_id, contact_id):
    return Contact.get_in_workspace(workspace_id, contact_id, not_found(contact_id))


def render(contact):
    """The contact as the API shows it (custom field values by field name)."""
    return contact.as_dict(field_names(contact.workspace_id))


def field_names(workspace_id):
    """{custom field id: name}; an active field wins a name shared with an archived one."""
    sql = (
        'SELECT * FROM "custom_field" WHERE "workspace_id" = ? '
        'ORDER BY "is_archived" DESC, "display_order"'
    )
    names, taken = {}, {}
    for field in fastsql.fetch_all(CustomField, sql, workspace_id):
        taken[folded(field.name)] = field.id
        names[field.id] = field.name
    return {field_id: name for field_id, name in names.items() if taken[folded(name)] == field_id}


def list_contacts(
    workspace_id, paging, q=None, phone=None, email=None, channel_id=None, custom_field=None
):
    query = Contact.in_workspace(workspace_id)
    if q:
        query = query.where(
            Contact.name.contains(q) | Contact.phone.contains(q) | Contact.email.contains(q)
        )
    if phone:
        query = query.where(Contact.phone == _filter_phone(phone))
    if email:
        query = query.where(Contact.email == email.strip().lower())
    if channel_id:
        query = query.where(Contact.id.in_(_contacts_on_channel(workspace_id, channel_id)))
    for name, value in (custom_field or {}).items():
        query = query.where(custom_field_condition(workspace_id, name, value))
    with long_statements(q or custom_field):  # every contact read
        page = paginate(query, Contact, paging, columns=Contact.leading_columns())
    page.items = Contact.with_custom_values(page.items)
    return page


def _filter_phone(value):
    # "+" in a query string decodes to a space when not percent-encoded.
    value = value.strip()
    return formats.phone(value if value.startswith("+") else "+" + value, "phone")


def _contacts_on_channel(workspace_id, channel_id):
    conversations = Conversation.select(Conversation.contact).where(
        Conversation.workspace == workspace_id, Conversation.channel == str(channel_id)
    )
    identities = ContactIdentity.select(ContactIdentity.contact).where(
        ContactIdentity.workspace == workspace_id, ContactIdentity.channel == str(channel_id)
    )
    return conversations | identities


def custom_field_condition(workspace_id, name, raw):
    field = _field_named(workspace_id, name, f"custom_field.{name}", writing=False)
    if field.field_type == "multiselect":
        return jsonquery.array_holds(Contact.custom_fields, field.id, raw)
    if field.field_type == "number":
        try:
            number = float(raw)
        except ValueError:
            raise ValidationError(f"custom_field.{name}", "must be a number") from None
        return jsonquery.member_equals(Contact.custom_fields, field.id, number)
    if field.field_type == "boolean":
        if raw.lower() not in ("true", "false"):
            raise ValidationError(f"custom_field.{name}", "must be true or false")
        return jsonquery.member_equals(Contact.custom_fields, field.id, raw.lower() == "true")
    return jsonquery.member_equals(Contact.custom_fields, field.id, raw)


def create_contact(workspace_id, values, now=None):
    with transaction():
        contact = Contact(workspace=workspace_id, name=values.get("name", ""))
        _apply_identity_fields(contact, values)
        contact.custom_fields = checked_custom_fields(
            workspace_id, {}, values.get("custom_fields") or {}
        )
        contact.save(force_insert=True)
        _replace_identities(contact, values.get("identities") or [])
        emit(workspace_id, "contact.created", formats.jsonable(render(contact)), now=now)
        return contact


def update_contact(workspace_id, contact_id, changes, now=None):
    with transaction():
        contact = get_contact(workspace_id, contact_id)
        if "name" in changes:
            contact.name = changes["name"]
        _apply_identity_fields(contact, changes)
        if "custom_fields" in changes:
            contact.custom_fields = checked_custom_fields(
                workspace_id, contact.custom_fields, changes["custom_fields"] or {}
            )
        contact.save()
        if "identities" in changes:
            _replace_identities(contact, changes["identities"] or [])
        scoring.on_contact_changed(contact, now or utcnow())
        emit(workspace_id, "contact.updated", formats.jsonable(render(contact)), now=now)
        return contact


def delete_contact(workspace_id, contact_id, now=None):
    """Erase the contact: its identities, conversations and their messages go too."""
    with transaction():
        contact = get_contact(workspace_id, contact_id)
        data = formats.jsonable(render(contact))
        Conversation.delete().where(Conversation.contact == contact.id).execute()
        contact.delete_instance()
        emit(workspace_id, "contact.deleted", data, now=now)


def _apply_identity_fields(contact, values):
    """Set phone and e-mail, each checked and unique in the workspace."""
    if values.get("phone") is not None:
        contact.phone = formats.phone(values["phone"], "phone")
        other = Contact.with_phone(contact.workspace_id, contact.phone)
        if other and other.id != contact.id:
            raise Conflict(
                f"Contact {other.id} already has the phone {contact.phone}.",
                code="CONTACT_PHONE_EXISTS",
            )
    elif "phone" in values:
        contact.phone = None
    if values.get("email") is not None:
        contact.email = formats.email(values["email"], "email")
        other = Contact.with_email(contact.workspace_id, contact.email)
        if other and other.id != contact.id:
            raise Conflict(
                f"Contact {other.id} already has the e-mail {contact.email}.",
                code="CONTACT_EMAIL_EXISTS",
            )
    elif "email" in values:
        contact.email = None


def _replace_identities(contact, identities):
    wanted = {}
    for index, identity in enumerate(identities):
        kind = identity["type"]
        check = adapters.channel_type(kind).identity
        external_id = check(identity["external_id"], f"identities[{index}].external_id")
        owner = ContactIdentity.find(contact.workspace_id, kind, external_id)
        if owner and owner.contact_id != contact.id:
            raise Conflict(
                f"The {kind} identity {external_id} belongs to contact {owner.contact_id}.",
                code="CONTACT_IDENTITY_EXISTS",
            )
        wanted[(kind, external_id)] = owner
    for row in contact.identity_rows():
        if (row.type, row.external_id) not in wanted:
            row.delete_instance()
    for (kind, external_id), owner in wanted.items():
        if owner is None:
            add_identity(contact, kind, external_id)


def add_identity(contact, kind, external_id, channel_id=None):
    identity = ContactIdentity(
        workspace=contact.workspace_id,
        contact=contact.id,
        type=kind,
        external_id=external_id,
        channel=channel_id,
        created_at=utcnow(),
    )
    return fastsql.insert(identity)


def checked_custom_fields(workspace_id, current, changes):
    """`current` (by field id) with `changes` (by field name) applied and checked:
    the type and options of each field, no archived field, every required
    field present. A null value removes it."""
    result = dict(current)
    for name, value in changes.items():
        field = _field_named(workspace_id, name, f"custom_fields.{name}", writing=True)
        if value is None:
            result.pop(field.id, None)
        else:
            result[field.id] = check_value(field, value, f"custom_fields.{name}")
    for field in CustomField.listed(workspace_id, include_archived=False):
        if field.is_required and result.get(field.id) in (None, "", []):
            raise ValidationError(
                f"custom_fields.{field.name}", "is required", code="MISSING_REQUIRED_FIELD"
            )
    _check_total_size(result)
    return result


def _check_total_size(values):
    size = sum(len(json.dumps(value, ensure_ascii=False)) for value in values.values())
    if size > MAX_CUSTOM_VALUES_CHARS:
        raise ValidationError(
            "custom_fields",
            f"the values hold {size:,} characters as JSON; at most {MAX_CUSTOM_VALUES_CHARS:,}",
        )


def _field_named(workspace_id, name, blame, writing):
    field = CustomField.active_named(workspace_id, name)
    if field is not None:
        return field
    archived = CustomField.archived_named(workspace_id, name)
    if archived is None:
        raise ValidationError(blame, "no custom field has this name in the workspace")
    if writing:
        raise ValidationError(blame, "the custom field is archived and cannot be written")
    return archived


def check_value(field, value, blame):
    kind = field.field_type
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(blame, "must be a number")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ValidationError(blame, "must be true or false")
        return value
    if kind == "multiselect":
        if not isinstance(value, list) or len(set(map(str, value))) != len(value):
            raise ValidationError(blame, "must be a list of distinct options")
        for item in value:
            _check_option(field, item, blame)
        return value
    if kind == "select":
        return _check_option(field, value, blame)
    checks = {
        "text": formats.text(10000, min_length=0),
        "date": formats.iso_date,
        "email": formats.email,
        "phone": formats.phone,
        "url": formats.http_url,
    }
    return checks[kind](value, blame)


def _check_option(field, value, blame):
    if value not in field.options:
        raise ValidationError(blame, f"must be one of: {', '.join(field.options)}")
    return value


def identify(channel, inbound):
    """The contact who wrote `inbound` on `channel`, creating it when new.

    Found by the identity on the network first, then by phone or e-mail (a
    contact already known from another channel); a new identity is linked.
    Returns (contact, change): change is "created", "updated" (a new identity
    or a name learnt) or None, for the caller to raise the contact event.
    """
    workspace_id = channel.workspace_id
    known = Contact.by_identity(workspace_id, channel.type, inbound.sender_id)
    if known is not None:
        return _named(known, inbound.sender_name)
    phone = _safe(formats.phone, inbound.sender_phone)
    email = _safe(formats.email, inbound.sender_email)
    contact = (phone and Contact.with_phone(workspace_id, phone)) or (
        email and Contact.with_email(workspace_id, email)
    )
    if contact is None:
        contact = fastsql.insert(
            Contact(
                workspace=workspace_id,
                name=(inbound.sender_name or "")[:200],
                phone=phone,
                email=email,
            )
        )
        add_identity(contact, channel.type, inbound.sender_id, channel.id)
        return contact, "created"
    add_identity(contact, channel.type, inbound.sender_id, channel.id)
    contact, change = _named(contact, inbound.sender_name)
    return contact, change or "updated"


def learns_name(contact, name):
    """A contact without a name takes the one the network gives (`name`)."""
    return bool(name) and not contact.name


def _named(contact, name):
    if not learns_name(contact, name):
        return contact, None
    contact.name = name[:200]
    contact.save()
    return contact, "updated"


def _safe(check, value):
    """A network-given value in canonical form, or None when it does not fit."""
    if not value:
        return None
    try:
        return check(value, "inbound")
    except ValidationError:
        return None
