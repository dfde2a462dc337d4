import {
  ENTITY_NAMESPACE,
  ENUM_NAMESPACE,
  enumMembers,
  RESOURCES,
  type FieldType,
  type ResourceDefinition,
} from './mapping';

/** `$metadata` (EDMX 4.0, CSDL XML) and the service document, generated from the mapping table. */

const escape = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export const typeName = (field: FieldType): string => {
  const bare = typeof field.type === 'string' ? field.type : `${ENUM_NAMESPACE}.${field.type.enum}`;
  return field.collection ? `Collection(${bare})` : bare;
};

function propertyXml(field: FieldType & { name: string; required?: boolean }): string {
  const facets = [
    field.maxLength !== undefined ? ` MaxLength="${field.maxLength}"` : '',
    field.precision !== undefined ? ` Precision="${field.precision}"` : '',
    field.scale !== undefined ? ` Scale="${field.scale}"` : '',
    // Collections are never null (an empty list); so are keys.
    field.collection || field.required ? ' Nullable="false"' : '',
  ].join('');
  return `        <Property Name="${escape(field.name)}" Type="${typeName(field)}"${facets}/>`;
}

function entityTypeXml(resource: ResourceDefinition): string {
  const lines = [
    `      <EntityType Name="${resource.name}">`,
    `        <Key>`,
    `          <PropertyRef Name="${resource.key}"/>`,
    `        </Key>`,
    ...resource.fields.map(propertyXml),
    ...(resource.navigation ?? []).map(
      (n) =>
        `        <NavigationProperty Name="${n.name}" Type="${n.collection ? `Collection(${ENTITY_NAMESPACE}.${n.target})` : `${ENTITY_NAMESPACE}.${n.target}`}"/>`,
    ),
    `      </EntityType>`,
  ];
  return lines.join('\n');
}

/** The enumerations the served fields use, every DD member of each (an open lookup with no member is a string). */
export function servedEnums(): string[] {
  const names = new Set<string>();
  for (const resource of RESOURCES)
    for (const field of resource.fields) if (typeof field.type !== 'string') names.add(field.type.enum);
  return [...names].sort();
}

function enumTypeXml(name: string): string {
  const members = enumMembers(name).map(
    ([member, standard], value) =>
      `        <Member Name="${escape(member)}" Value="${value}">\n          <Annotation Term="RESO.OData.Metadata.StandardName" String="${escape(standard)}"/>\n        </Member>`,
  );
  return [`      <EnumType Name="${name}">`, ...members, `      </EnumType>`].join('\n');
}

export function metadataXml(): string {
  const sets = RESOURCES.map((r) => {
    const bindings = (r.navigation ?? []).map(
      (n) => `          <NavigationPropertyBinding Path="${n.name}" Target="${n.target}"/>`,
    );
    return bindings.length === 0
      ? `        <EntitySet Name="${r.name}" EntityType="${ENTITY_NAMESPACE}.${r.name}"/>`
      : [
          `        <EntitySet Name="${r.name}" EntityType="${ENTITY_NAMESPACE}.${r.name}">`,
          ...bindings,
          `        </EntitySet>`,
        ].join('\n');
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">',
    '  <edmx:DataServices>',
    `    <Schema Namespace="${ENTITY_NAMESPACE}" xmlns="http://docs.oasis-open.org/odata/ns/edm">`,
    ...RESOURCES.map(entityTypeXml),
    '      <EntityContainer Name="Default">',
    ...sets,
    '      </EntityContainer>',
    '    </Schema>',
    `    <Schema Namespace="${ENUM_NAMESPACE}" xmlns="http://docs.oasis-open.org/odata/ns/edm">`,
    ...servedEnums().map(enumTypeXml),
    '    </Schema>',
    '  </edmx:DataServices>',
    '</edmx:Edmx>',
    '',
  ].join('\n');
}

/** The service document: every entity set, relative to the service root. */
export function serviceDocument(serviceRoot: string) {
  return {
    '@odata.context': `${serviceRoot}/$metadata`,
    value: RESOURCES.map((r) => ({ name: r.name, kind: 'EntitySet', url: r.name })),
  };
}
