package sarama

// DecodeRecordBatch decodes raw, one magic-2 record batch as a broker
// serves it in a fetch response, with the decoder sarama's consumer uses
// (Chronos patch: an entry point for Chronos's tests, which check that
// every batch the embedded broker accepts is one this decoder reads;
// embedded.FuzzProduceValidation). A batch the consumer would take for one
// cut short by the fetch (fewer bytes or records than it declares) is
// ErrInsufficientData here: the consumer would ask for more forever.
func DecodeRecordBatch(raw []byte) (*RecordBatch, error) {
	b := new(RecordBatch)
	if err := decode(raw, b, nil); err != nil {
		return nil, err
	}
	if b.PartialTrailingRecord {
		return nil, ErrInsufficientData
	}
	return b, nil
}
