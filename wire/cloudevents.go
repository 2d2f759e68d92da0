package wire

import (
	"slices"
	"time"
)

// CloudEvents in Kafka's binary content mode (the CloudEvents Kafka protocol
// binding, version 1.0): the event's attributes as ce_-prefixed headers, the
// payload as the record's value, its media type in content-type. The relay
// sets them when asked (relay.Config.CloudEvents), beside its own headers or
// instead of them.
const (
	HeaderCESpecVersion = "ce_specversion" // always CloudEventsSpecVersion
	HeaderCEID          = "ce_id"          // the event's id
	HeaderCEType        = "ce_type"        // outbox_event.event_type
	HeaderCESource      = "ce_source"      // the source template filled for the event
	HeaderCESubject     = "ce_subject"     // outbox_event.aggregate_id
	HeaderCETime        = "ce_time"        // outbox_event.created_at, RFC 3339 in UTC
	HeaderContentType   = "content-type"   // the payload's media type: application/json
)

// CloudEventsSpecVersion is the CloudEvents version the headers follow.
const CloudEventsSpecVersion = "1.0"

// DefaultCloudEventsSource is the source template's default: the aggregate
// type, a URI reference naming what the event is about.
const DefaultCloudEventsSource = PlaceholderAggregateType

// cloudEventsHeaders are CloudEvents' headers in the order the relay sets them.
var cloudEventsHeaders = [...]string{HeaderCESpecVersion, HeaderCEID, HeaderCEType, HeaderCESource, HeaderCESubject,
	HeaderCETime, HeaderContentType}

// CloudEventsHeaders returns the headers CloudEvents' binary mode sets, in the
// order the relay sets them: a row's own headers may not use them when the
// relay sets them.
func CloudEventsHeaders() []string { return slices.Clone(cloudEventsHeaders[:]) }

// CloudEvents returns m's CloudEvents headers, the source being the template
// source filled as a topic template is ({aggregate_type}, {event_type}).
func (m Meta) CloudEvents(source string) []Header {
	return []Header{
		{HeaderCESpecVersion, []byte(CloudEventsSpecVersion)},
		{HeaderCEID, []byte(m.EventID)},
		{HeaderCEType, []byte(m.EventType)},
		{HeaderCESource, []byte(Topic(source, m.AggregateType, m.EventType))},
		{HeaderCESubject, []byte(m.AggregateID)},
		{HeaderCETime, []byte(m.CreatedAt.UTC().Format(time.RFC3339Nano))},
		{HeaderContentType, []byte("application/json")},
	}
}
