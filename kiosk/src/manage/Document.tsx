import { For, Show } from 'solid-js'
import { ApiFailure, money } from './api'
import { FieldError, invalid } from './forms'

/** A client's identity document as the API answers it (contract §19): the number stored without dots or dashes. */
export interface ClientDocument {
  type: DocumentType
  number: string
  country: string
}

export type DocumentType = 'DNI' | 'PASAPORTE' | 'CUIT' | 'CUIL' | 'CI' | 'OTRO'

export const DOCUMENT_LABEL: Record<DocumentType, string> = {
  DNI: 'DNI',
  PASAPORTE: 'Pasaporte',
  CUIT: 'CUIT',
  CUIL: 'CUIL',
  CI: 'Cédula (CI)',
  OTRO: 'Otro',
}

/** What the form holds: no type means no document. */
export interface DocumentDraft {
  type: DocumentType | ''
  number: string
  country: string
}

export type DocumentErrors = { number?: string; country?: string }

export const emptyDocument = (): DocumentDraft => ({ type: '', number: '', country: 'AR' })
export const draftOf = (d: ClientDocument | null | undefined): DocumentDraft => (d ? { type: d.type, number: d.number, country: d.country } : emptyDocument())

/** The API's own normalisation (dots, spaces and dashes out, nothing else), so the check here says what it will say. */
export const normaliseNumber = (raw: string) => raw.replace(/[.\s\-‐‑‒–—]/g, '')

export function documentProblems(d: DocumentDraft): DocumentErrors {
  if (!d.type) return {}
  const found: DocumentErrors = {}
  const number = normaliseNumber(d.number)
  if (!number) found.number = 'Escriba el número del documento.'
  else if ([...number].length > 30) found.number = 'El número lleva hasta 30 caracteres (los puntos, espacios y guiones se quitan solos).'
  if (!/^[A-Za-z]{2}$/.test(d.country.trim())) found.country = 'El país va con su código de dos letras, por ejemplo AR o UY.'
  return found
}

/** The body's `document`: null clears it. */
export const documentBody = (d: DocumentDraft) => (d.type ? { type: d.type, number: d.number.trim(), country: d.country.trim().toUpperCase() } : null)

export const documentText = (d: ClientDocument | null | undefined) => (d ? `${DOCUMENT_LABEL[d.type] ?? d.type} ${d.number}${d.country !== 'AR' ? ` (${d.country})` : ''}` : '')

/**
 * The words for 409 DOCUMENT_TAKEN, naming who holds the document when the list can say (`GET /api/clients?document=`
 * finds by number exactly), so the person knows whether it is the same customer already on file.
 */
export async function takenWords(d: DocumentDraft): Promise<string> {
  const number = normaliseNumber(d.number)
  try {
    const found = await money<{ data: { name: string; document: ClientDocument | null }[] }>('GET', `/api/clients?document=${encodeURIComponent(number)}&pageSize=5`)
    const holder = found.data.find((c) => c.document?.type === d.type)
    if (holder) return `Ese documento ya es de «${holder.name}». Si es la misma persona, use esa ficha.`
  } catch {
    // The refusal stands on its own without the holder's name.
  }
  return 'Ese documento ya es de otro cliente. Si es la misma persona, use esa ficha.'
}

export const isTaken = (e: unknown) => e instanceof ApiFailure && e.code === 'DOCUMENT_TAKEN'

export function DocumentFields(props: { id: string; draft: DocumentDraft; errors: DocumentErrors; onChange: (d: DocumentDraft) => void }) {
  const set = (k: keyof DocumentDraft, v: string) => props.onChange({ ...props.draft, [k]: v })
  const err = (k: keyof DocumentErrors) => <FieldError id={`${props.id}-${k}`} text={props.errors[k]} />
  const invalidField = (k: keyof DocumentErrors) => invalid(`${props.id}-${k}`, props.errors[k])
  return (
    <fieldset class="document">
      <legend>Documento</legend>
      <div class="inline fields">
        <label>
          Tipo
          <select name="document-type" value={props.draft.type} onChange={(e) => set('type', e.currentTarget.value)}>
            <option value="">Sin documento</option>
            <For each={Object.keys(DOCUMENT_LABEL) as DocumentType[]}>{(t) => <option value={t}>{DOCUMENT_LABEL[t]}</option>}</For>
          </select>
        </label>
        <Show when={props.draft.type}>
          <label>
            Número
            <input name="document-number" maxlength="60" autocomplete="off" value={props.draft.number} {...invalidField('number')} onInput={(e) => set('number', e.currentTarget.value)} />
            {err('number')}
          </label>
          <label>
            País
            <input name="document-country" class="code" maxlength="2" value={props.draft.country} {...invalidField('country')} onInput={(e) => set('country', e.currentTarget.value)} />
            {err('country')}
          </label>
        </Show>
      </div>
    </fieldset>
  )
}
