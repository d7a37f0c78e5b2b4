package env

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestReserveSubnetSkipsASubnetAnInterfaceStillHas: a bridge left by a
// node killed before its cleanup keeps its subnet's address and route;
// its reservation file is gone or names a dead process, and the next
// node must still not take that subnet.
func TestReserveSubnetSkipsASubnetAnInterfaceStillHas(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to add an interface (the e2e's nodes need it too)")
	}
	first, release, err := reserveSubnet()
	if err != nil {
		t.Fatal(err)
	}
	// The address goes on while the subnet is still reserved: a node
	// another test package starts meanwhile (make test runs the e2e's
	// beside this) must never get a subnet this bridge also routes.
	link := fmt.Sprintf("kilnst%d", os.Getpid()%100000)
	gw := strings.Replace(first, ".0/24", ".1/24", 1)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", link).Run() })
	for _, args := range [][]string{{"link", "add", link, "type", "bridge"}, {"address", "add", gw, "dev", link}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			release()
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	release() // as a killed node's reservation: gone
	next, release, err := reserveSubnet()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if next == first {
		t.Errorf("reserved %s again while interface %s has %s", next, link, gw)
	}
}

// TestPrivateHostIPNeverSharesAnAddress: an address another test process
// already holds on lo (here, the one this process would try first) is
// skipped, so no test's cleanup removes another's registry address.
func TestPrivateHostIPNeverSharesAnAddress(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to add an address (the e2e's registry needs it too)")
	}
	n := os.Getpid() & 0xffff
	taken := fmt.Sprintf("10.254.%d.%d", n>>8, n&255)
	if out, err := exec.Command("ip", "address", "add", taken+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("adding %s: %v: %s", taken, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "address", "del", taken+"/32", "dev", "lo").Run() })
	got := PrivateHostIP(t)
	if got == taken {
		t.Fatalf("PrivateHostIP returned %s, which another holder has", got)
	}
	if again := PrivateHostIP(t); again == got || again == taken {
		t.Fatalf("a second PrivateHostIP returned %s, held already (%s, %s)", again, got, taken)
	}
}
