package bundle

// RekorBundle is a transparency-log entry's signed timestamp and payload.
type RekorBundle struct {
	SignedEntryTimestamp []byte
	Payload              RekorPayload
}

// RekorPayload is the log entry a RekorBundle carries.
type RekorPayload struct {
	Body           interface{} `json:"body"`
	IntegratedTime int64       `json:"integratedTime"`
	LogIndex       int64       `json:"logIndex"`
	LogID          string      `json:"logID"`
}

// RFC3161Timestamp is a DER-encoded RFC 3161 TimeStampResponse.
type RFC3161Timestamp struct {
	SignedRFC3161Timestamp []byte
}
