import { announcementText } from './speech'
import type { Call } from './types'

let audio: AudioContext | undefined

function audioContext(): AudioContext | undefined {
  const Ctor = window.AudioContext ?? (window as unknown as { webkitAudioContext?: typeof AudioContext }).webkitAudioContext
  if (!Ctor) return undefined
  audio ??= new Ctor()
  if (audio.state === 'suspended') void audio.resume().catch(() => {})
  return audio
}

/**
 * Browsers keep audio muted until the page sees a gesture unless the kiosk browser is started with an autoplay
 * policy that allows it; any touch or key press on the TV's remote unlocks it for the rest of the session.
 */
export function unlockAudioOnGesture() {
  const unlock = () => {
    audioContext()
    window.removeEventListener('pointerdown', unlock)
    window.removeEventListener('keydown', unlock)
  }
  window.addEventListener('pointerdown', unlock)
  window.addEventListener('keydown', unlock)
}

/** Two-note "ding-dong"; resolves when it has finished so speech does not talk over it. */
function chime(): Promise<void> {
  const ctx = audioContext()
  if (!ctx) return Promise.resolve()
  const start = ctx.currentTime + 0.05
  const notes: Array<[number, number]> = [
    [880, 0],
    [659.25, 0.45],
  ]
  for (const [frequency, offset] of notes) {
    const osc = ctx.createOscillator()
    const gain = ctx.createGain()
    osc.type = 'sine'
    osc.frequency.value = frequency
    const t0 = start + offset
    gain.gain.setValueAtTime(0.0001, t0)
    gain.gain.exponentialRampToValueAtTime(0.5, t0 + 0.02)
    gain.gain.exponentialRampToValueAtTime(0.0001, t0 + 0.9)
    osc.connect(gain).connect(ctx.destination)
    osc.start(t0)
    osc.stop(t0 + 0.95)
  }
  return new Promise((resolve) => setTimeout(resolve, 1400))
}

function spanishVoice(): SpeechSynthesisVoice | undefined {
  const voices = window.speechSynthesis.getVoices()
  const lang = (v: SpeechSynthesisVoice) => v.lang.replace('_', '-').toLowerCase()
  return voices.find((v) => lang(v) === 'es-ar') ?? voices.find((v) => lang(v).startsWith('es-419')) ?? voices.find((v) => lang(v).startsWith('es'))
}

function speak(text: string) {
  if (!('speechSynthesis' in window)) return
  const synth = window.speechSynthesis
  const utterance = new SpeechSynthesisUtterance(text)
  utterance.lang = 'es-AR'
  const voice = spanishVoice()
  if (voice) utterance.voice = voice
  utterance.rate = 0.9
  // A newer call replaces whatever is still being read out.
  synth.cancel()
  synth.speak(utterance)
}

// Chrome fills the voice list asynchronously; asking early makes it ready by the first call.
if ('speechSynthesis' in window) window.speechSynthesis.getVoices()

let queue: Promise<void> = Promise.resolve()

/** Chime and/or speech for a new call, as the company's settings ask; announcements never overlap. */
export function announce(call: Call, options: { sound: boolean; tts: boolean }) {
  queue = queue.then(async () => {
    try {
      if (options.sound) await chime()
      if (options.tts) speak(announcementText(call))
    } catch {
      // Sound is a courtesy; the screen already shows the call.
    }
  })
}
