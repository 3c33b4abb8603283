package codecs_test
import ("testing";"github.com/chronos-scheduler/chronos/codecs")
func TestProbe(t *testing.T){
 for _, b := range [][]byte{{'J', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},{'J', 1, 1, 1, 0, 0, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
  r, err := codecs.DecodeJobRecord(b); t.Log(r, err)
 }
}
