import { useState } from 'react';
import { ActionButton } from '../../components/ActionButton';
import type { MemberFields } from '../../api/orgs';
import { MEMBER_ROLES, ORG_ROLES, type Member, type MemberRole, type OrgRole } from '../../api/types';

/** Project name → role, as the selects edit it ('' = no role there). */
export type RoleChoice = Record<string, MemberRole | ''>;

/** The map a request sends: projects without a role left out. */
export function chosenRoles(c: RoleChoice): Record<string, MemberRole> {
  return Object.fromEntries(Object.entries(c).filter(([, r]) => r !== '')) as Record<string, MemberRole>;
}

/** One select per project of the organization: the member's role there, or none. */
export function ProjectRoles({ idPrefix, projects, value, onChange }: { idPrefix: string; projects: string[]; value: RoleChoice; onChange: (v: RoleChoice) => void }) {
  if (!projects.length) return <p className="muted">This organization has no project yet.</p>;
  return (
    <fieldset className="settings">
      <legend>Role per project</legend>
      {projects.map((p) => (
        <div className="field" key={p}>
          <label htmlFor={`${idPrefix}-${p}`}>{p}</label>
          <select id={`${idPrefix}-${p}`} value={value[p] ?? ''} onChange={(e) => onChange({ ...value, [p]: e.target.value as MemberRole | '' })}>
            <option value="">(no role)</option>
            {MEMBER_ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
      ))}
    </fieldset>
  );
}

/**
 * One member: its organization role, project roles and hidePayloads, saved
 * together (`PATCH /orgs/:org/members/:username`, which ends its sessions), and removal.
 */
export function MemberCard({ member, projects, onSave, onRemove }: { member: Member; projects: string[]; onSave: (c: MemberFields) => Promise<unknown>; onRemove: () => Promise<unknown> }) {
  const [orgRole, setOrgRole] = useState<OrgRole>(member.orgRole);
  const [hide, setHide] = useState(member.hidePayloads);
  const [roles, setRoles] = useState<RoleChoice>(member.projects as RoleChoice);
  const id = `m-${member.id}`;
  return (
    <li className="card" aria-label={`Member ${member.username}`}>
      <div className="card-head">
        <h2>
          {member.username} {member.invited && <span className="muted">(invited: no password yet)</span>}
        </h2>
        <ActionButton label="Remove" danger confirm={`Remove ${member.username} from the organization? Its sessions end at once.`} run={async () => (await onRemove(), 'Removed')} />
      </div>
      <div className="settings">
        <div className="field">
          <label htmlFor={`${id}-org`}>Organization role</label>
          <select id={`${id}-org`} value={orgRole} onChange={(e) => setOrgRole(e.target.value as OrgRole)}>
            {ORG_ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <div className="field check">
          <input id={`${id}-hide`} type="checkbox" checked={hide} onChange={(e) => setHide(e.target.checked)} />
          <label htmlFor={`${id}-hide`}>Hide payloads</label>
        </div>
      </div>
      <ProjectRoles idPrefix={`${id}-p`} projects={projects} value={roles} onChange={setRoles} />
      <ActionButton label="Save" run={async () => (await onSave({ orgRole, hidePayloads: hide, projects: chosenRoles(roles) }), 'Saved: its sessions were ended')} />
    </li>
  );
}
