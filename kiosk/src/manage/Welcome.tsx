import { A } from '@solidjs/router'
import { createSignal, onMount, Show } from 'solid-js'
import { linkFor, takeWelcome } from '../company'
import { CopyField } from './forms'
import { can } from './session'

/** Read once when the app loads: the setup page left it for this tab (kiosk/src/company.ts). */
const [welcome, setWelcome] = createSignal(takeWelcome())

/**
 * The first thing an owner reads after setup: the company number every sign-in asks for, the links of the two apps
 * (both carrying it), and where to start. It stays while the owner moves between sections until «Entendido»; it is
 * never shown again. It takes the focus, so a screen reader reads it first and Enter on «Entendido» closes it.
 */
export function WelcomeNotice() {
  let box: HTMLElement | undefined
  onMount(() => box?.focus())
  return (
    <Show when={welcome()}>
      {(w) => (
        <section class="welcome" role="region" aria-labelledby="welcome-title" tabindex="-1" ref={box} data-testid="welcome">
          <h2 id="welcome-title">¡Listo! «{w().name}» quedó configurada</h2>
          <p class="welcome-number">
            Número de empresa: <strong data-testid="welcome-company-number">{w().company}</strong>
          </p>
          <p>
            Anótelo: lo piden el panel de gestión y la consola de atención al ingresar (este navegador ya lo recuerda). Los enlaces de abajo lo llevan
            incluido; compártalos con su personal.
          </p>
          <CopyField label="Panel de gestión (dueños y gerentes)" value={linkFor('/manage', w().company)} testid="welcome-manage-link" />
          <CopyField label="Consola de atención (personal de ventanilla)" value={linkFor('/staff', w().company)} testid="welcome-staff-link" />
          <Show when={w().starter && can('operations.create')}>
            <p>
              Ya tiene la «Caja principal» y los tipos de operación para comprar y vender: puede <A href="/nueva">registrar la primera compra</A> ahora.
            </p>
          </Show>
          <div class="row">
            <button type="button" class="primary" onClick={() => setWelcome(null)} data-testid="welcome-close">
              Entendido
            </button>
          </div>
        </section>
      )}
    </Show>
  )
}
