package mcrender

import (
	"fmt"
	"reflect"

	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// forceFile is the MCD's force-update flag file; no config may write it.
const forceFile = "/run/machine-config-daemon-force"

// irreconcilable is one change a running node cannot take in place.
type irreconcilable struct {
	field  string // path under spec, e.g. config.storage.disks
	path   string // file path for per-file reasons
	reason string
}

// sections MCO refuses to change on a running node, with how to read them.
var sections = []struct {
	field string
	get   func(ign35types.Config) any
}{
	{"config.storage.disks", func(c ign35types.Config) any { return c.Storage.Disks }},
	{"config.storage.filesystems", func(c ign35types.Config) any { return c.Storage.Filesystems }},
	{"config.storage.raid", func(c ign35types.Config) any { return c.Storage.Raid }},
	{"config.storage.directories", func(c ign35types.Config) any { return c.Storage.Directories }},
	{"config.kernelArguments", func(c ign35types.Config) any { return c.KernelArguments }},
}

// reconcileCheck follows MCO's isConfigReconcilable: passwd groups and
// non-core users, Ignition kernel arguments, disks, filesystems, raid and
// directories may not change; links may only be removed; no file may use
// append or write the MCD force file; FIPS may not change. MCO's
// MachineConfiguration irreconcilableValidationOverrides are not read.
func reconcileCheck(old, next ign35types.Config, oldFIPS, newFIPS bool) *irreconcilable {
	if !reflect.DeepEqual(old.Passwd, next.Passwd) {
		if !reflect.DeepEqual(old.Passwd.Groups, next.Passwd.Groups) {
			return &irreconcilable{field: "config.passwd.groups", reason: "passwd groups cannot change on a running node"}
		}
		if !reflect.DeepEqual(old.Passwd.Users, next.Passwd.Users) {
			if r := checkUsers(next.Passwd.Users); r != nil {
				return r
			}
		}
	}
	for _, s := range sections {
		if !reflect.DeepEqual(s.get(old), s.get(next)) {
			return &irreconcilable{field: s.field, reason: "this section cannot change on a running node"}
		}
	}
	if !reflect.DeepEqual(old.Storage.Links, next.Storage.Links) && len(next.Storage.Links) != 0 {
		return &irreconcilable{field: "config.storage.links", reason: "links can only be removed on a running node"}
	}
	for _, f := range next.Storage.Files {
		if len(f.Append) > 0 {
			return &irreconcilable{field: "config.storage.files", path: f.Path, reason: "append is not idempotent, so it cannot be applied to a running node"}
		}
		if f.Path == forceFile {
			return &irreconcilable{field: "config.storage.files", path: f.Path, reason: "the MCD force file cannot be written through Ignition"}
		}
	}
	if oldFIPS != newFIPS {
		return &irreconcilable{field: "fips", reason: fmt.Sprintf("FIPS cannot change on a running cluster (%t → %t)", oldFIPS, newFIPS)}
	}
	return nil
}

func checkUsers(users []ign35types.PasswdUser) *irreconcilable {
	for _, u := range users {
		if u.Name != coreUser {
			return &irreconcilable{field: "config.passwd.users", path: u.Name, reason: "only the core user can change on a running node"}
		}
	}
	if len(users) == 0 {
		return nil
	}
	u := users[len(users)-1]
	if u.PasswordHash == nil && len(u.SSHAuthorizedKeys) == 0 {
		return &irreconcilable{field: "config.passwd.users", path: u.Name, reason: "the core user must have SSH keys or a password hash"}
	}
	u.Name, u.PasswordHash, u.SSHAuthorizedKeys = "", nil, nil
	if !reflect.DeepEqual(u, ign35types.PasswdUser{}) {
		return &irreconcilable{field: "config.passwd.users", path: coreUser, reason: "only SSH keys and the password hash of the core user can change on a running node"}
	}
	return nil
}

// checkReconcilable compares the new merged config (as merged, not
// re-parsed: MCO re-parses and so fails with a validation error on an
// append-only file, whose overwrite it set to true) with the pool's
// current one and names the input MC responsible for the first
// irreconcilable change. MCO finds it by re-running the check per input and
// matching the message; kiln looks for the input that sets the section.
func checkReconcilable(cur *mcfgv1.MachineConfig, newCfg ign35types.Config, newFIPS bool, inputs []parsed) error {
	oldCfg, err := parseConfig(cur.Spec.Config.Raw)
	if err != nil {
		return fmt.Errorf("MachineConfig %q (the pool's current config): spec.config: %w", cur.Name, err)
	}
	r := reconcileCheck(oldCfg, newCfg, cur.Spec.FIPS, newFIPS)
	if r == nil {
		return nil
	}
	where := "spec." + r.field
	if r.path != "" {
		where += " (" + r.path + ")"
	}
	if who := blame(r, inputs); who != "" {
		return fmt.Errorf("MachineConfig %q: %s: not reconcilable with the pool's current config %q: %s", who, where, cur.Name, r.reason)
	}
	return fmt.Errorf("%s: no input sets it any more: not reconcilable with the pool's current config %q: %s", where, cur.Name, r.reason)
}

// blame returns the last input that sets what r is about, or "".
func blame(r *irreconcilable, inputs []parsed) string {
	who := ""
	for _, p := range inputs {
		if setsField(r, p) {
			who = p.mc.Name
		}
	}
	return who
}

func setsField(r *irreconcilable, p parsed) bool {
	c := p.cfg
	switch r.field {
	case "fips":
		return p.mc.Spec.FIPS
	case "config.passwd.groups":
		return len(c.Passwd.Groups) > 0
	case "config.passwd.users":
		for _, u := range c.Passwd.Users {
			if u.Name == r.path {
				return true
			}
		}
		return false
	case "config.kernelArguments":
		return len(c.KernelArguments.ShouldExist)+len(c.KernelArguments.ShouldNotExist) > 0
	case "config.storage.links":
		return len(c.Storage.Links) > 0
	case "config.storage.files":
		for _, f := range c.Storage.Files {
			if f.Path == r.path {
				return true
			}
		}
		return false
	}
	for _, s := range sections {
		if s.field == r.field {
			return reflect.ValueOf(s.get(c)).Len() > 0
		}
	}
	return false
}
