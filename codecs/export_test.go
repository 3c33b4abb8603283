package codecs

// The strict command decoder and the fast reader DecodeCommand tries first,
// for the tests that hold one to the other.
var (
	DecodeCommandStrict = decodeCommandStrict
	CommandHead         = commandHead
)
